// The gRPC edge: a RunFunction server, plaintext (--insecure) or mutual TLS as
// Crossplane's function runner speaks it.
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FunctionRunnerServiceService, type RunFunctionRequest, type RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { type Log, runFunction } from './function.js';

/** Requests larger than this are refused by gRPC itself, before they are parsed. */
export const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

export interface ServerOptions {
  address: string;
  insecure: boolean;
  tlsServerCertsDir: string;
}

/** Reads tls.crt, tls.key and ca.crt; clients must present a certificate signed by ca.crt. */
export function serverCredentials(opts: ServerOptions): grpc.ServerCredentials {
  if (opts.insecure) return grpc.ServerCredentials.createInsecure();
  const read = (file: string) => {
    const path = join(opts.tlsServerCertsDir, file);
    try {
      return readFileSync(path);
    } catch (err) {
      const why = err instanceof Error && 'code' in err ? String((err as NodeJS.ErrnoException).code) : 'unreadable';
      throw new Error(`cannot read ${path} (${why}): TLS needs tls.crt, tls.key and ca.crt in --tls-server-certs-dir, or pass --insecure`);
    }
  };
  return grpc.ServerCredentials.createSsl(read('ca.crt'), [{ private_key: read('tls.key'), cert_chain: read('tls.crt') }], true);
}

export function newServer(log: Log): grpc.Server {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    'grpc.max_send_message_length': MAX_REQUEST_BYTES,
  });
  server.addService(FunctionRunnerServiceService, {
    runFunction(
      call: grpc.ServerUnaryCall<RunFunctionRequest, RunFunctionResponse>,
      callback: grpc.sendUnaryData<RunFunctionResponse>,
    ) {
      // runFunction never throws: failures are Fatal results.
      callback(null, runFunction(call.request, log));
    },
  });
  return server;
}

/** Binds and resolves with the port actually bound (useful with port 0). */
export async function listen(server: grpc.Server, opts: ServerOptions): Promise<number> {
  const creds = serverCredentials(opts);
  return new Promise((resolve, reject) => {
    server.bindAsync(opts.address, creds, (err, port) => (err ? reject(err) : resolve(port)));
  });
}

/** Stops accepting, lets in-flight calls finish, and forces the rest after the grace period. */
export function shutdown(server: grpc.Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    timer.unref();
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

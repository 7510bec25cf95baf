// The gRPC edge: a RunFunction server, plaintext (--insecure) or mutual TLS as
// Crossplane's function runner speaks it.
import * as grpc from '@grpc/grpc-js';
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FunctionRunnerServiceService, RunFunctionRequest, type RunFunctionResponse, Severity, Target } from '@crossplane-org/function-sdk-typescript';
import { AwsFactsSource } from './aws/facts.js';
import { type Log, runFunctionLive } from './function.js';
import { decodeRunFunctionRequest, encodeRunFunctionResponse } from './wire.js';

/** Requests larger than this are refused by gRPC itself, before they are parsed. */
export const MAX_REQUEST_BYTES = 16 * 1024 * 1024;
/** Answers larger than this cannot be sent; they become a Fatal result that says so. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

const CERT_HELP = 'TLS needs tls.crt, tls.key and ca.crt in --tls-server-certs-dir, or pass --insecure';

/** Every certificate of a PEM file, parsed; none, or one that does not parse, is an error naming the file. */
function certificates(pem: Buffer, path: string): X509Certificate[] {
  const blocks = pem.toString('utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error(`${path} holds no PEM certificate (no "-----BEGIN CERTIFICATE-----" block): ${CERT_HELP}`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new Error(`${path}: certificate ${i + 1} cannot be parsed (${err instanceof Error ? err.message : String(err)}): ${CERT_HELP}`);
    }
  });
}

function privateKey(pem: Buffer, path: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (err) {
    throw new Error(`${path} is not a PEM private key (${err instanceof Error ? err.message : String(err)}): ${CERT_HELP}`);
  }
}

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
      throw new Error(`cannot read ${path} (${why}): ${CERT_HELP}`);
    }
  };
  const ca = read('ca.crt');
  const key = read('tls.key');
  const cert = read('tls.crt');
  // OpenSSL would take a ca.crt without a certificate in it and then refuse
  // every client; a bad tls.crt or tls.key it reports without naming the file.
  // Check all three here, so a broken mount fails the start and says which file.
  const path = (file: string) => join(opts.tlsServerCertsDir, file);
  certificates(ca, path('ca.crt'));
  const [leaf] = certificates(cert, path('tls.crt'));
  if (!leaf!.checkPrivateKey(privateKey(key, path('tls.key')))) {
    throw new Error(`${path('tls.key')} is not the key of the certificate in ${path('tls.crt')}: ${CERT_HELP}`);
  }
  return grpc.ServerCredentials.createSsl(ca, [{ private_key: key, cert_chain: cert }], true);
}

/**
 * The answer on the wire. One too large to send (an earlier step's desired
 * state or context carried through, say) would end the call with a bare gRPC
 * error; it becomes a Fatal result instead, so the user reads why.
 */
/**
 * A request off the wire. The fast decoder reads every well-formed message as
 * the SDK's does; on bytes it refuses (groups, truncated fields) the SDK's own
 * decoder has the last word, so nothing the SDK accepts is refused here.
 */
function decodeRequest(bytes: Buffer): RunFunctionRequest {
  try {
    return decodeRunFunctionRequest(bytes);
  } catch {
    return RunFunctionRequest.decode(bytes);
  }
}

function encodeResponse(rsp: RunFunctionResponse): Buffer {
  const bytes = encodeRunFunctionResponse(rsp);
  if (bytes.length <= MAX_RESPONSE_BYTES) return bytes;
  const mib = (n: number) => (n / (1024 * 1024)).toFixed(1);
  const tooLarge: RunFunctionResponse = {
    meta: rsp.meta,
    desired: { composite: undefined, resources: {} },
    results: [
      {
        severity: Severity.SEVERITY_FATAL,
        reason: 'ResponseTooLarge',
        message: `function-platform's answer would be ${mib(bytes.length)} MiB, over the ${mib(MAX_RESPONSE_BYTES)} MiB a function may send; nothing was changed`,
        target: Target.TARGET_COMPOSITE_AND_CLAIM,
      },
    ],
    context: undefined,
    requirements: undefined,
    conditions: [],
  };
  return encodeRunFunctionResponse(tooLarge);
}

export function newServer(log: Log, aws = new AwsFactsSource()): grpc.Server {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    'grpc.max_send_message_length': MAX_REQUEST_BYTES,
    // Channel statistics cost CPU on every call and nothing here reads them.
    'grpc.enable_channelz': 0,
  });
  const service = {
    ...FunctionRunnerServiceService,
    // The same bytes as the SDK's generated codec, without its per-value wrappers (see src/wire.ts).
    runFunction: { ...FunctionRunnerServiceService.runFunction, requestDeserialize: decodeRequest, responseSerialize: encodeResponse },
  };
  server.addService(service, {
    runFunction(
      call: grpc.ServerUnaryCall<RunFunctionRequest, RunFunctionResponse>,
      callback: grpc.sendUnaryData<RunFunctionResponse>,
    ) {
      // Never rejects: failures are Fatal results, AWS trouble is a warning.
      void runFunctionLive(call.request, aws, log).then((rsp) => callback(null, rsp));
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

// The size sweep: server CPU per call as the request grows, at one call in
// flight. The mid-cutover Widget's observed Deployment of the old color carries
// extra status (a list of small objects, as a large observed resource would)
// until the request reaches each size; function-platform, the Node floor and
// the Go floor answer the same bytes, taking turns.
import { join } from 'node:path';
import { RunFunctionRequest, Severity } from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../src/function.js';
import type { Case } from './cases.js';
import { checkAnswer } from './cases.js';
import type { Config, Paths } from './config.js';
import { f, pad, say } from './format.js';
import { measureGhz } from './ghz.js';
import { measure, warm } from './load.js';
import type { Setup } from './orchestrate.js';
import { type ImplId, type Running, start } from './servers.js';

export interface SizePoint {
  impl: ImplId;
  kb: number;
  requestBytes: number;
  calls: number;
  cpuMsPerCall: number;
  p50Ms: number;
}

const encode = (req: RunFunctionRequest) => Buffer.from(RunFunctionRequest.encode(req).finish());

/** The case's request with `entries` padding objects in one observed resource's status. */
function padded(base: RunFunctionRequest, key: string, entries: number): RunFunctionRequest {
  const observed = base.observed!.resources[key]!;
  const resource = observed.resource as Record<string, unknown>;
  const status = (resource['status'] ?? {}) as Record<string, unknown>;
  const benchPadding = Array.from({ length: entries }, (_, i) => ({
    name: `replica-set-${String(i).padStart(6, '0')}`,
    reason: 'MinimumReplicasAvailable',
    ready: i % 2 === 0,
    replicas: i,
  }));
  return {
    ...base,
    observed: {
      ...base.observed!,
      resources: {
        ...base.observed!.resources,
        [key]: { ...observed, resource: { ...resource, status: { ...status, benchPadding } } },
      },
    },
  };
}

/** Requests of about each size (KB), checked in-process to be answered as the case is. */
export function sizedRequests(c: Case, sizesKb: number[]): Array<{ kb: number; bytes: Buffer }> {
  const key = Object.keys(c.request.observed?.resources ?? {}).sort()[0];
  if (!key) throw new Error(`${c.id}: no observed resource to grow`);
  const base = encode(c.request).length;
  const per = (encode(padded(c.request, key, 1000)).length - base) / 1000;
  return sizesKb.map((kb) => {
    const req = padded(c.request, key, Math.max(0, Math.ceil((kb * 1024 - base) / per)));
    const rsp = runFunction(req);
    const fatal = rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
    if (fatal) throw new Error(`size sweep ${kb} KB: the function answers Fatal in-process: ${fatal.message}`);
    return { kb, bytes: encode(req) };
  });
}

/** Runs the sweep for function-platform (and the candidate), the Node floor and the Go floor. */
export async function runSizes(setup: Setup, config: Config, paths: Paths): Promise<SizePoint[]> {
  const c = setup.cases.find((k) => k.id === 'widget-cutover');
  if (config.sizesKb.length === 0 || !c) return [];
  const ids = setup.order.filter((id) => ['ours', 'bundle', 'candidate', 'floor', 'go-floor'].includes(id));
  const requests = sizedRequests(c, config.sizesKb);
  say(`size sweep: ${c.id} grown to ${requests.map((r) => `${r.bytes.length} B`).join(', ')}, one call in flight`);
  const points: SizePoint[] = [];
  // Ours answers the grown request as the case (the padding is status it never reads); a floor echoes.
  const checkFor = (id: ImplId) =>
    id === 'ours' || id === 'bundle' || id === 'candidate'
      ? (raw: Buffer) => checkAnswer(raw, c.expectKeys, c.expectReady)
      : (raw: Buffer) => checkAnswer(raw, [], undefined);
  const running = new Map<ImplId, Running>();
  try {
    for (const id of ids) running.set(id, await start(setup.impls[id], paths.logDir, requests[0]!.bytes, checkFor(id)));
    for (const r of requests) {
      // About 2 s of the slowest server's time per size and implementation; never fewer than 40 calls.
      const n = Math.max(40, Math.min(config.calls, Math.round(20_000 / r.kb)));
      for (const id of ids) {
        const run = running.get(id)!;
        const target = { client: run.client, pid: run.pid, request: r.bytes, check: checkFor(id) };
        await warm(target, 1, Math.max(10, Math.round(n / 5)), 5);
      }
      const latencies = new Map(ids.map((id) => [id, new Float64Array(n)]));
      const cpu = new Map<ImplId, number>(ids.map((id) => [id, 0]));
      const half = Math.ceil(n / 2);
      for (let round = 0; round < 2; round++) {
        const calls = round === 0 ? half : n - half;
        for (let k = 0; k < ids.length; k++) {
          const id = ids[(k + round) % ids.length]!;
          const run = running.get(id)!;
          const chunk =
            setup.loadgen === 'ghz'
              ? await measureGhz(
                  {
                    ghz: setup.anchors.ghz,
                    proto: setup.impls[id].proto,
                    address: `127.0.0.1:${run.port}`,
                    pid: run.pid,
                    request: r.bytes,
                    workDir: join(paths.root, '.cache', 'bench', 'requests'),
                  },
                  1,
                  calls,
                  latencies.get(id)!,
                  round * half,
                )
              : await measure(
                  { client: run.client, pid: run.pid, request: r.bytes, check: () => undefined },
                  1,
                  calls,
                  config.checkEvery,
                  latencies.get(id)!,
                  round * half,
                );
          cpu.set(id, cpu.get(id)! + chunk.serverCpuMs);
        }
      }
      for (const id of ids) {
        const sorted = Float64Array.from(latencies.get(id)!).sort();
        const p = {
          impl: id,
          kb: r.kb,
          requestBytes: r.bytes.length,
          calls: n,
          cpuMsPerCall: cpu.get(id)! / n,
          p50Ms: sorted[Math.floor(n / 2)]!,
        };
        points.push(p);
        say(
          `  ${pad(setup.impls[id].label, 34)} ${pad(`${r.kb} KB`, 8)} cpu ${f(p.cpuMsPerCall, 3)} ms/call  p50 ${f(p.p50Ms)} ms  (${n} calls)`,
        );
      }
    }
  } finally {
    for (const r of running.values()) await r.stop();
  }
  return points;
}

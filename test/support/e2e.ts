// Helpers for the e2e suites: a control plane per test file in a temp dir,
// waiting on what real controllers and Crossplane write, and reading it back
// the way a user does (kubectl) or the way a script does (the API).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Json } from './apiserver.js';
import {
  type ControlPlane,
  type ControlPlaneOptions,
  RESTRICTED_NAMESPACE_LABELS,
  startControlPlane,
} from './control-plane.js';

export { RESTRICTED_NAMESPACE_LABELS };

/** A control plane for one test file; KEEP_CONTROL_PLANE=1 leaves its dir (logs) behind. */
export async function controlPlaneForSuite(opts: Omit<ControlPlaneOptions, 'dir'> = {}): Promise<ControlPlane> {
  const dir = mkdtempSync(join(tmpdir(), 'fp-e2e-'));
  const cp = await startControlPlane({ ...opts, dir, functionDebug: true });
  console.log(
    `# control plane up in ${((cp.timings['total'] ?? 0) / 1000).toFixed(1)} s (${dir}): ${JSON.stringify(cp.timings)}`,
  );
  const stop = cp.stop;
  cp.stop = async () => {
    await stop();
    if (!process.env['KEEP_CONTROL_PLANE']) rmSync(dir, { recursive: true, force: true });
  };
  return cp;
}

/** Polls `probe` until it returns something other than undefined; the error names what was awaited and the last value seen. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not after ${timeoutMs} ms${last !== undefined ? ` (last: ${String(last)})` : ''}`);
    await sleep(everyMs);
  }
}

export function conditionOf(obj: Json | undefined, type: string): Json | undefined {
  return (obj?.['status']?.['conditions'] as Json[] | undefined)?.find((c) => c['type'] === type);
}

/** Whether the object's Ready and Synced conditions are True, as `kubectl get` shows them. */
export function readyAndSynced(obj: Json | undefined): boolean {
  return conditionOf(obj, 'Ready')?.['status'] === 'True' && conditionOf(obj, 'Synced')?.['status'] === 'True';
}

/** `kubectl get` output as rows of columns (header first). */
export function table(text: string): string[][] {
  return text
    .trim()
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('W1') && !l.includes('version difference'))
    .map((l) => l.trim().split(/\s{2,}/));
}

/** The events of one object, as the API server stores them (with their counts). */
export async function eventsOf(cp: ControlPlane, namespace: string, kind: string, name: string): Promise<Json[]> {
  const all = await cp.client.listObjs('v1', 'Event', namespace);
  return all.filter((e) => e['involvedObject']?.['kind'] === kind && e['involvedObject']?.['name'] === name);
}

export async function ensureNamespace(cp: ControlPlane, name: string): Promise<void> {
  await cp.client.applyObj(
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: RESTRICTED_NAMESPACE_LABELS } },
    { fieldManager: 'kubectl', force: true },
  );
}

/** FailedCreate events in `namespace`: pods a controller could not create (PodSecurity's refusals among them). */
export async function failedCreates(cp: ControlPlane, namespace: string): Promise<string[]> {
  const all = await cp.client.listObjs('v1', 'Event', namespace);
  return all
    .filter((e) => e['reason'] === 'FailedCreate')
    .map((e) => `${e['involvedObject']?.['kind']} ${e['involvedObject']?.['name']}: ${e['message']}`);
}

/**
 * The platform team's second Composition: the installed one `installed`, named
 * `name`, its step's Input with `database` merged into defaults.database, as a
 * platform would set a policy for the Databases that select it.
 */
export async function compositionWithDatabaseDefaults(
  cp: ControlPlane,
  installed: string,
  name: string,
  database: Json,
): Promise<void> {
  const found = await cp.client.getObj({
    apiVersion: 'apiextensions.crossplane.io/v1',
    kind: 'Composition',
    metadata: { name: installed },
  });
  if (!found) throw new Error(`Composition ${installed} is not installed`);
  const pipeline = structuredClone(found['spec']['pipeline']) as Json[];
  const input = (pipeline[0]!['input'] ?? {}) as Json;
  pipeline[0]!['input'] = {
    apiVersion: 'platform.fn.example.com/v1beta1',
    kind: 'Input',
    ...input,
    defaults: { ...input['defaults'], database: { ...input['defaults']?.['database'], ...database } },
  };
  await cp.client.applyObj(
    {
      apiVersion: 'apiextensions.crossplane.io/v1',
      kind: 'Composition',
      metadata: { name, labels: found['metadata']['labels'] },
      spec: { ...found['spec'], pipeline },
    },
    { fieldManager: 'platform-team', force: true },
  );
}

/**
 * An application pod that only sleeps (a test execs its client in it), admitted under the restricted Pod
 * Security Standard as the product's own pods are, with what the caller adds to its container and pod; waits
 * until it runs. It never restarts.
 */
export async function startApplicationPod(
  cp: ControlPlane,
  namespace: string,
  name: string,
  image: string,
  extra: { env?: Json[]; volumeMounts?: Json[]; volumes?: Json[] } = {},
): Promise<void> {
  await cp.client.applyObj(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace },
      spec: {
        restartPolicy: 'Never',
        securityContext: {
          runAsUser: 999,
          runAsGroup: 999,
          runAsNonRoot: true,
          seccompProfile: { type: 'RuntimeDefault' },
        },
        containers: [
          {
            name: 'app',
            image,
            command: ['sleep', '86400'],
            ...(extra.env ? { env: extra.env } : {}),
            ...(extra.volumeMounts ? { volumeMounts: extra.volumeMounts } : {}),
            resources: { requests: { cpu: '10m', memory: '64Mi' }, limits: { memory: '256Mi' } },
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          },
        ],
        ...(extra.volumes ? { volumes: extra.volumes } : {}),
      },
    },
    { fieldManager: 'e2e', force: true },
  );
  await eventually(`application pod ${name} Running`, async () => {
    const p = await cp.client.getObj({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace } });
    return p?.['status']?.['phase'] === 'Running' ? true : undefined;
  });
}

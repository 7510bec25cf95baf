// What a cluster running Crossplane has before a user creates anything, laid
// onto a bare API server: the CRDs of Crossplane, the providers and
// CloudNativePG from ../shared/crds, our packages' XRDs, Compositions and
// metadata, and the XR (and claim) CRDs that real Crossplane generates from
// the XRDs (it runs just long enough to make them).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readYamlDocs } from './crank.js';
import { repoRoot } from './function-process.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, type ApiServer, type Json, type KubeClient } from './apiserver.js';
import { CROSSPLANE_CRDS, crossplaneReady, startCrossplane } from './control-plane.js';
import { SHARED_CRDS } from '../../dev/infra/paths.js';

/** The field manager the test installs with, as a person with kubectl would. */
export const INSTALLER = 'fp-test-installer';

/** The namespaced Configuration (Crossplane v2) and the claims one (legacy XRDs). */
export type Mode = 'namespaced' | 'claims';
export const PACKAGE_DIR: Record<Mode, string> = {
  namespaced: join(repoRoot, 'package', 'configuration'),
  claims: join(repoRoot, 'package', 'configuration-claims'),
};

function yamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...yamlFiles(p));
    else if (/\.ya?ml$/.test(e.name)) out.push(p);
  }
  return out.sort();
}

/**
 * Every CRD in ../shared/crds (Crossplane's own, provider-kubernetes,
 * provider-upjet-aws, CloudNativePG), as a package manager installs it: a
 * CRD converted by webhook gets the provider's Service and CA filled in, as
 * Crossplane's revision establisher does (Service named after the parent
 * package, in crossplane-system, port 9443). Nothing here calls the webhook:
 * objects are only ever read and written in their storage version.
 */
export function sharedCrds(caBundlePem: string): { file: string; crd: Json }[] {
  const out: { file: string; crd: Json }[] = [];
  for (const file of yamlFiles(SHARED_CRDS)) {
    for (const doc of readYamlDocs(file)) {
      if (doc['kind'] !== 'CustomResourceDefinition') continue;
      const conversion: Json | undefined = doc['spec']?.['conversion'];
      if (conversion?.['strategy'] === 'Webhook') {
        const parent = file.split('/').slice(-2)[0]!;
        const clientConfig: Json = ((conversion['webhook'] ??= {})['clientConfig'] ??= {});
        clientConfig['caBundle'] = Buffer.from(caBundlePem).toString('base64');
        clientConfig['service'] = {
          ...(clientConfig['service'] ?? {}),
          name: parent,
          namespace: 'crossplane-system',
          port: 9443,
        };
      }
      out.push({ file, crd: doc });
    }
  }
  return out;
}

/** The documents of one package directory, by kind. */
export function packageDocs(mode: Mode): { xrds: Json[]; compositions: Json[]; meta: Json[] } {
  const docs: Json[] = yamlFiles(PACKAGE_DIR[mode]).flatMap((f) => readYamlDocs(f));
  return {
    xrds: docs.filter((d) => d['kind'] === 'CompositeResourceDefinition'),
    compositions: docs.filter((d) => d['kind'] === 'Composition'),
    meta: docs.filter((d) => String(d['apiVersion']).startsWith('meta.pkg.crossplane.io/')),
  };
}

/** Server-side apply as an installer (kubectl apply --server-side --force-conflicts). */
export async function install(client: KubeClient, obj: Json): Promise<Json> {
  return client.applyObj(obj, { fieldManager: INSTALLER, force: true });
}

/** Applies CRDs and waits until every one is Established. */
export async function installCrds(client: KubeClient, crds: Json[]): Promise<void> {
  for (const crd of crds) await install(client, crd);
  for (const crd of crds) await client.waitEstablished(String(crd['metadata']['name']));
}

export async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  try {
    await client.createObj({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  } catch (e) {
    if (!(e instanceof ApiError && e.code === 409)) throw e;
  }
}

/**
 * Waits until Crossplane has established the XRD (and offered its claim), and
 * returns the CRDs Crossplane generated for it, as the server stores them.
 */
export async function establishXrd(client: KubeClient, xrd: Json, timeoutMs = 60_000): Promise<Json[]> {
  const deadline = Date.now() + timeoutMs;
  const wanted = xrd['spec']?.['claimNames'] ? ['Established', 'Offered'] : ['Established'];
  for (;;) {
    const stored = await client.getObj(xrd);
    const conditions: Json[] = stored?.['status']?.['conditions'] ?? [];
    if (wanted.every((t) => conditions.some((c) => c['type'] === t && c['status'] === 'True'))) break;
    if (Date.now() > deadline)
      throw new Error(
        `XRD ${xrd['metadata']['name']} not ${wanted.join(' and ')} after ${timeoutMs} ms: ${JSON.stringify(conditions)}`,
      );
    await sleep(200);
  }
  const group = String(xrd['spec']['group']);
  const names = [xrd['spec']['names']['plural'], xrd['spec']['claimNames']?.['plural']]
    .filter(Boolean)
    .map((p) => `${p}.${group}`);
  const out: Json[] = [];
  for (const name of names) out.push(await client.waitEstablished(name, timeoutMs));
  return out;
}

/**
 * A cluster as Crossplane leaves it once both packages' dependencies and one
 * Configuration are installed: Crossplane's own CRDs (from the version its
 * binary is), every other shared CRD, the XRDs, Compositions and package
 * metadata of `mode`, and the CRDs real Crossplane generated from the XRDs.
 * Crossplane is stopped once they are established, so that nothing acts on
 * the objects the suites create: they judge what the API server accepts.
 */
export async function prepareCluster(api: ApiServer, mode: Mode): Promise<{ xrds: Json[]; generated: Json[] }> {
  const crossplane = await startCrossplane(api, api.dir);
  try {
    const client = api.client;
    // Crossplane's own CRDs are the ones its binary installed; ../shared has a newer release's.
    const own = new Set(
      readdirSync(CROSSPLANE_CRDS)
        .filter((f) => f.endsWith('.yaml'))
        .map((f) => f.replace(/^([^_]+)_(.+)\.yaml$/, '$2.$1')),
    );
    await installCrds(
      client,
      sharedCrds(api.caPem)
        .map((c) => c.crd)
        .filter((crd) => !own.has(String(crd['metadata']['name']))),
    );
    await crossplaneReady(crossplane);
    const { xrds, compositions, meta } = packageDocs(mode);
    for (const xrd of xrds) await install(client, xrd);
    for (const c of compositions) await install(client, c);
    for (const m of meta)
      await install(client, { ...m, metadata: { ...m['metadata'], namespace: 'crossplane-system' } });
    const generated: Json[] = [];
    for (const xrd of xrds) generated.push(...(await establishXrd(client, xrd)));
    return { xrds, generated };
  } finally {
    await crossplane.proc.stop();
  }
}

/** The namespace an example goes to: its own, else team-a (as the README applies them with -n team-a). */
export function namespaceOf(example: Json): string {
  return String(example['metadata']?.['namespace'] ?? 'team-a');
}

// The last dump of a Database in a StatefulSet deleted under Delete. Crossplane
// runs no function while a composite is deleted, so the dump is set up while
// it lives: a pod that waits (jobs.ts lastDumpPod) and dumps on its stop
// signal, sent when the garbage collector deletes it with the Database;
// and Usages of the server's StatefulSet and client Service `by` that pod,
// so Crossplane's webhook refuses their deletion until the pod is gone, dump
// uploaded. A composed Usage `by` something waits for it to be gone before
// it lets go (Crossplane v2.2 protection/usage reconciler), so nothing is
// deleted under the dump, whatever order the garbage collector takes.
//
// Only where it can work: Usages served (their CRD), a namespaced composite
// (a claim's composite composes through provider-kubernetes Objects, whose
// Usages would be released at once), backups on with a store that stays (not
// one made for the Database, which goes with it), and the last copy not
// declined (spec.backup.finalSnapshot). Its key is fixed while the Database
// lives, so status.deletion names it beforehand; `standing` only once
// Crossplane has marked the server in use for it.
import { judge } from '../../../kinds/index.js';
import { type Obj, str } from '../../../kube.js';
import { usage } from '../../../kinds/protection.js';
import { dnsLabel, shortHash } from '../../../names.js';
import type { Desired, Requirement } from '../../blueprint.js';
import { backupKey } from '../commands.js';
import { baseName } from '../database.js';
import { mayCompose, USAGES, usagesRequirement } from '../deletion-order.js';
import { instanceName } from '../instances.js';
import { lastDumpPod } from '../jobs.js';
import { madeForDatabase } from '../object-store.js';
import type { DatabaseCall } from './placement.js';

const KEY = 'last-dump';

/** The grace period the dump and upload run in: 15 minutes, or a minute per GB of data when that is longer (some 17 MB/s for dump and upload together). */
export const lastDumpGraceSeconds = (storageGB: number) => Math.max(900, storageGB * 60);

/** What the last dump of a Database will be, when one is set up: where it goes, and the pod that takes it. */
export interface LastDump {
  pod: string;
  location: string;
  /** The pod runs and Crossplane holds the server for it: deleting now takes the dump. */
  standing: boolean;
  /** Otherwise, what it waits for. */
  waiting?: string;
}

/** The server's StatefulSet and client Service as observed: held once Crossplane marks them in use. */
export interface Server {
  statefulSet?: Obj;
  service?: Obj;
}

const IN_USE_LABEL = 'crossplane.io/in-use';

export interface LastDumpPlan {
  resources: Desired[];
  requirements: Record<string, Requirement>;
  dump?: LastDump;
  /** Asked for (Delete, backups on with a store, the last copy not declined) but not set up: why. */
  unable?: string;
}

/** Whether the spec asks for a last copy at deletion: Delete, backups on with a store, and the copy not declined. */
function asked(input: DatabaseCall): boolean {
  const { spec } = input;
  return (
    spec.deletionPolicy === 'Delete' &&
    spec.backup.enabled &&
    spec.backup.objectStore !== undefined &&
    spec.backup.finalSnapshot !== false
  );
}

/** The key of the last dump: in the Database's folder, named after its uid (a Database made again under its name never overwrites it). */
export function lastDumpKey(input: Pick<DatabaseCall, 'owner' | 'spec'>): string {
  const store = input.spec.backup.objectStore!;
  return backupKey(store.prefix, input.owner.name, `last-dump-${input.owner.uid.slice(0, 8)}`, input.spec.engine);
}

/**
 * The last-dump pod and its Usages for the live generation `live`, or nothing when none can or should be set
 * up. Asked twice a call (compose, then status.deletion): planned once, for the call's observed map.
 */
export function planLastDump(input: DatabaseCall, live: number, observed: Server): LastDumpPlan {
  let byLive = planned.get(input.observed);
  if (!byLive) planned.set(input.observed, (byLive = new Map()));
  let plan = byLive.get(live);
  if (!plan) byLive.set(live, (plan = planFor(input, live, observed)));
  return plan;
}

const planned = new WeakMap<ReadonlyMap<string, Obj>, Map<number, LastDumpPlan>>();

function planFor(input: DatabaseCall, live: number, observed: Server): LastDumpPlan {
  const requirements = { [USAGES]: usagesRequirement };
  if (!asked(input)) return { resources: [], requirements };
  if (input.owner.claim)
    return {
      resources: [],
      requirements,
      unable:
        "a claim's composite cannot hold its server for a last dump: its Usages would travel in provider-kubernetes Objects, which let go at once",
    };
  const composedBefore = [...input.observed.keys()].find((k) => k.startsWith(`${KEY}-`) && !k.includes('-holds-'));
  if (!mayCompose(input, composedBefore ?? KEY))
    return {
      resources: [],
      requirements,
      ...(input.required.get(USAGES) === undefined
        ? {}
        : { unable: 'this cluster serves no Crossplane Usages, which would hold the server up for a last dump' }),
    };
  const store = input.spec.backup.objectStore!;
  if (madeForDatabase(store))
    return {
      resources: [],
      requirements,
      unable:
        "the store made for this Database goes with it, its access key first, and a Database made again gets a store of its own; a last dump needs a store that stays (spec.backup.objectStore, or the platform's)",
    };
  const key = lastDumpKey(input);
  const server = instanceName(input.owner, live);
  const service = baseName(input.owner);
  const target = { owner: input.owner, spec: input.spec };
  const grace = lastDumpGraceSeconds(input.spec.storageGB);
  // A pod cannot change what it runs: a new one (named by what it runs) replaces it. The old one's stop signal
  // takes one more dump, uploaded through a temporary key of its own to the same key.
  const draft = lastDumpPod('', target, key, grace);
  const version = shortHash(JSON.stringify([draft, server, service]), 8);
  const podKey = `${KEY}-${version}`;
  const podName = dnsLabel(baseName(input.owner), 'last-dump', version);
  const pod = lastDumpPod(podName, target, key, grace);
  const seen = input.observed.get(podKey);
  const by = { apiVersion: 'v1', kind: 'Pod', name: podName };
  const hold = (what: string, of: { apiVersion: string; kind: string; name: string }): Desired => ({
    key: `${podKey}-holds-${what}`,
    object: usage(dnsLabel(podName, 'holds', what), input.owner.namespace, {
      of,
      by,
      reason: `pod ${podName} takes the last dump of Database ${input.owner.name} before its server goes`,
      replayDeletion: false,
    }),
    independent: true,
  });
  const holds = [
    hold('server', { apiVersion: 'apps/v1', kind: 'StatefulSet', name: server }),
    hold('service', { apiVersion: 'v1', kind: 'Service', name: service }),
  ];
  // A pod that ended (evicted, its node shut down) never runs again: left out for a call, it is made anew.
  const ended = ['Failed', 'Succeeded'].includes(str(seen, 'status', 'phase') ?? '');
  const waiting = waitingFor(input, seen, holds, observed);
  return {
    resources: [...(ended ? [] : [{ key: podKey, object: pod, independent: true }]), ...holds],
    requirements,
    dump: {
      pod: podName,
      location: `s3://${store.bucket}/${key}`,
      standing: waiting === undefined,
      ...(waiting ? { waiting } : {}),
    },
  };
}

/** What the last dump waits for before deleting would take it; undefined once the pod runs and the server is held. */
function waitingFor(input: DatabaseCall, pod: Obj | undefined, holds: Desired[], server: Server): string | undefined {
  if (!judge(pod).ready) return 'the pod is not running yet';
  const marked = [server.statefulSet, server.service].every(
    (o) => str(o, 'metadata', 'labels', IN_USE_LABEL) === 'true',
  );
  if (!marked || holds.some((h) => !input.observed.has(h.key)))
    return 'Crossplane has not marked the server in use for it yet (its Usage controller runs only with its webhooks on)';
  return undefined;
}

// Deletion order with Crossplane v2's Usages: what reads a Database holds it
// while it reads it, so the user's `kubectl delete` is refused (409) with the
// reason, naming the holder, instead of pulling the server from under a
// running dump or restore. A Usage is composed only where the cluster serves
// the kind (its CRD is asked for: Crossplane v1 has none), and one composed
// before is kept while the answer is not in yet, so it never flaps.
//
// replayDeletion stays off: Crossplane records a refused deletion on the
// object and never clears that record, so a Usage that replays would delete
// the Database when any later Usage goes (the next nightly backup ending),
// long after the user chose to keep it. Refused means refused: the user
// deletes again once the holder is done.
import { record, type Obj } from '../../kube.js';
import { USAGE_CRD, usage } from '../../kinds/protection.js';
import { dnsLabel } from '../../names.js';
import type { Context, Desired, Requirement } from '../blueprint.js';
import { appName } from './database.js';

/** The required resource that says whether this cluster serves Usages: their CRD. */
export const USAGES = 'usage-crd';

export const usagesRequirement: Requirement = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  matchName: USAGE_CRD,
};

/** The key of the Usage by which this composite holds its Database. */
export const HOLD_KEY = 'holds-database';

/**
 * The Usage holding the Database as composed before, when this call cannot
 * judge whether it should (the Database not read as it is): kept as it is
 * until a call can. Nothing when there was none.
 */
export function keptHold(ctx: Pick<Context, 'observed' | 'required'>): Desired[] {
  const seen = ctx.observed.get(HOLD_KEY);
  if (!seen || !mayCompose(ctx, HOLD_KEY)) return [];
  const meta = record(seen, 'metadata') ?? {};
  const object: Obj = {
    apiVersion: seen['apiVersion'],
    kind: seen['kind'],
    metadata: { name: meta['name'], namespace: meta['namespace'] },
    spec: seen['spec'],
  };
  return [{ key: HOLD_KEY, object, independent: true }];
}

/** Whether a Usage may be composed: the cluster serves them, or one composed before exists and the answer is not in. */
export function mayCompose(ctx: Pick<Context, 'observed' | 'required'>, key: string): boolean {
  const answer = ctx.required.get(USAGES);
  return answer === undefined ? ctx.observed.has(key) : answer.length > 0;
}

/**
 * The Usage by which this composite (a DatabaseBackup or DatabaseRestore)
 * holds Database `database` of its namespace while it reads it; nothing when
 * the cluster serves no Usages. `reason` completes "<Kind> <name> ...".
 */
export function holdDatabase(ctx: Context, database: string, reason: string): Desired[] {
  if (!mayCompose(ctx, HOLD_KEY)) return [];
  const { owner } = ctx;
  // The user's kind: a claim's composite is the XR kind of the same name.
  const kind = owner.claim ? owner.kind.replace(/^X/, '') : owner.kind;
  const holder = `${kind} ${appName(owner)}`;
  // The kind in the name: a DatabaseBackup and a DatabaseRestore may share one.
  const name = dnsLabel(appName(owner), kind.replace(/^Database/, '').toLowerCase(), 'holds', database);
  const object: Obj = usage(name, owner.namespace, {
    of: { apiVersion: 'example.com/v1', kind: 'Database', name: database },
    reason: `${holder} ${reason}`,
    replayDeletion: false,
  });
  return [{ key: HOLD_KEY, object, independent: true }];
}

/** The key of the Usage by which a Database holds the bucket made for its backups. */
export const BUCKET_HOLD_KEY = 'store-bucket-in-use';

/**
 * The Usage by which a Database holds the bucket made for its backups, for as
 * long as the Database exists: a hand deleting the Bucket is refused, naming
 * the Database. By reason, not `by` the Database: a Usage composed by its own
 * `by` waits for it to be gone, and a Database deleted in the foreground
 * waits for its Usage, so neither would ever go. No replay either: when the
 * Database goes, the garbage collector deletes the Bucket and retries a
 * refused deletion by itself; a replay would act only when the Usage goes
 * while the Database stays, carrying out a deletion refused long before.
 */
export function holdBucket(ctx: Pick<Context, 'owner' | 'observed' | 'required'>, bucket: string): Desired[] {
  if (!mayCompose(ctx, BUCKET_HOLD_KEY)) return [];
  const { owner } = ctx;
  const object: Obj = usage(dnsLabel(bucket, 'in-use'), owner.namespace, {
    of: { apiVersion: 's3.aws.m.upbound.io/v1beta1', kind: 'Bucket', name: bucket },
    reason: `Database ${appName(owner)} keeps its backups in it: delete the Database first`,
    replayDeletion: false,
  });
  return [{ key: BUCKET_HOLD_KEY, object, independent: true }];
}

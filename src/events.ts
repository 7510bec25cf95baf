// Events that say something once. Crossplane turns every result into an
// event on the composite, and client-go's recorder lets about 25 events per
// object through before it drops the rest; Crossplane's own "not yet ready"
// events already spend most of that. So the function's events must each say
// something new.
//
// The pure run emits a Normal event when the reason differs from the one on
// the observed condition, one per condition that moves (a Database's Ready
// and BackupHealthy can move in the same answer). During fast reconciles Crossplane can call again
// before that condition is stored (seen under real Crossplane: the same
// Normal event four times within a second), and warnings would repeat on every
// poll. The server therefore remembers, per composite, what it said last:
// a Normal event whose reason was among the Normal reasons of the last answer
// that carried any, or a warning with the same reason and message, is not
// said again within the memory's time. It is a filter on
// events alone; nothing composed depends on it, and a restarted function
// forgets, at worst saying a thing once more.
//
// Only the last answer of a reconcile counts. A function that asks for
// required resources is called again with the answers, and Crossplane turns
// into events only the results of the call whose requirements it has
// answered; the earlier calls' results are dropped. Remembering those as said
// silenced every event of a Database (which always asks for its backups and
// restores): call one said it, Crossplane dropped it, call two was filtered.
// So an answer that asks for something the request did not answer is not
// the last: its events are left out and nothing is remembered.
import { type RunFunctionRequest, type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { LRUCache } from 'lru-cache';

export interface EventMemoryOptions {
  /** How long a said thing stays said. */
  ttlMs?: number;
  /** How many composites to remember. */
  max?: number;
}

export class EventMemory {
  /** The Normal reasons of the last answer that carried any, per composite uid. */
  private readonly lastNormal: LRUCache<string, ReadonlySet<string>>;
  /** Warnings said, by uid, reason and message. */
  private readonly warned: LRUCache<string, true>;

  constructor(opts: EventMemoryOptions = {}) {
    const ttl = opts.ttlMs ?? 10 * 60_000;
    const max = opts.max ?? 20_000;
    this.lastNormal = new LRUCache({ max, ttl });
    this.warned = new LRUCache({ max, ttl });
  }

  /**
   * Drops from `rsp` the Normal and Warning results already said for composite
   * `uid`, and all of them from an answer Crossplane will not act on (it asks
   * for what `req` did not answer); Fatal results always pass.
   */
  filter(uid: string | undefined, rsp: RunFunctionResponse, req?: RunFunctionRequest): RunFunctionResponse {
    if (rsp.results.length === 0) return rsp;
    if (req && !lastOfReconcile(req, rsp)) {
      rsp.results = rsp.results.filter((r) => r.severity === Severity.SEVERITY_FATAL);
      return rsp;
    }
    if (!uid) return rsp;
    const before = this.lastNormal.get(uid);
    const now = new Set<string>();
    rsp.results = rsp.results.filter((r) => {
      const reason = r.reason ?? '';
      if (r.severity === Severity.SEVERITY_NORMAL) {
        const news = !before?.has(reason) && !now.has(reason);
        now.add(reason);
        return news;
      }
      if (r.severity === Severity.SEVERITY_WARNING) {
        const key = `${uid}\0${reason}\0${r.message}`;
        if (this.warned.has(key)) return false;
        this.warned.set(key, true);
      }
      return true;
    });
    // Remembered whole, said or not: the same answer again says nothing.
    if (now.size > 0) this.lastNormal.set(uid, now);
    return rsp;
  }
}

/**
 * Whether Crossplane acts on this answer: every resource and schema it
 * requires was answered in the request (Crossplane v2 answers resources in
 * required_resources, v1 in extra_resources), so it will not call again for
 * this reconcile.
 */
export function lastOfReconcile(req: RunFunctionRequest, rsp: RunFunctionResponse): boolean {
  const asked = { ...(rsp.requirements?.extraResources ?? {}), ...(rsp.requirements?.resources ?? {}) };
  const answered = { ...(req.extraResources ?? {}), ...(req.requiredResources ?? {}) };
  const schemas = Object.keys(rsp.requirements?.schemas ?? {});
  return (
    Object.keys(asked).every((name) => name in answered) && schemas.every((name) => name in (req.requiredSchemas ?? {}))
  );
}

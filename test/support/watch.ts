// Watches of the API server for the harness: the stand-ins wake on changes
// instead of polling (a poll every 300 ms was most of the API server's
// traffic at rest, on machines with two shared cores), and the e2e suites
// record every version of an object a user would see with `kubectl get -w`.
import { type KubeConfig, Watch } from '@kubernetes/client-node';
import type { Json } from './apiserver.js';

export interface Watching {
  stop(): void;
}

/**
 * Watches `path` (a collection URL, e.g. /api/v1/persistentvolumeclaims) and
 * calls `onEvent` for each event; a watch the server ends is started again,
 * from the newest version seen, after `retryMs`.
 */
export function watchPath(
  kc: KubeConfig,
  path: string,
  onEvent: (type: string, obj: Json) => void,
  opts: { query?: Record<string, string>; retryMs?: number; onError?: (err: unknown) => void } = {},
): Watching {
  const watch = new Watch(kc);
  let stopped = false;
  let abort: AbortController | undefined;
  let resourceVersion: string | undefined;
  const start = async (): Promise<void> => {
    if (stopped) return;
    const restart = (err: unknown) => {
      if (stopped) return;
      if (err) opts.onError?.(err);
      // An expired version (410) starts from now: a list is not needed, the next event wakes the reader.
      if (err && String((err as { message?: string }).message ?? err).includes('410')) resourceVersion = undefined;
      setTimeout(() => void start(), opts.retryMs ?? 500);
    };
    try {
      abort = await watch.watch(
        path,
        { ...(opts.query ?? {}), ...(resourceVersion ? { resourceVersion, allowWatchBookmarks: true } : {}) },
        (type, obj: Json) => {
          const rv = obj?.['metadata']?.['resourceVersion'];
          if (typeof rv === 'string') resourceVersion = rv;
          if (type === 'BOOKMARK') return;
          if (type === 'ERROR') {
            if (obj?.['code'] === 410) resourceVersion = undefined;
            return;
          }
          onEvent(type, obj);
        },
        restart,
      );
    } catch (e) {
      restart(e);
    }
  };
  void start();
  return {
    stop: () => {
      stopped = true;
      abort?.abort();
    },
  };
}

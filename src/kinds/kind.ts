// What the function knows about one Kubernetes kind, in one place: how to
// judge it, whether it holds data, and its cluster-scoped form for claims.
import type { Obj } from '../kube.js';
import type { Verdict } from './verdict.js';

export interface Kind {
  group: string;
  kind: string;
  /** Readiness of an observed object of this kind (which exists and is not being deleted). */
  judge(obj: Obj): Verdict;
  /** Holds data someone would miss: never dropped from desired state once it exists (per object when a function). */
  holdsData?: boolean | ((obj: Obj) => boolean);
  /**
   * For a data holder: whether deleting this observed object keeps its data
   * (a StatefulSet whose volumes are retained, a managed resource that
   * orphans what it manages). Only then may a blueprint let it go on purpose.
   */
  keepsDataWhenDeleted?(obj: Obj): boolean;
  /** For a namespaced managed resource: the apiVersion of its cluster-scoped twin (claims mode). */
  clusterScoped?: string;
}

/** The Kind table of one API family. */
export type Family = readonly Kind[];

/**
 * A typed accessor of one kind: what the function reads of an observed
 * object, read defensively (observed state is whatever the cluster says);
 * undefined when there is no object.
 */
export function accessor<View>(read: (obj: Obj) => View): (obj: Obj | undefined) => View | undefined {
  return (obj) => (obj === undefined ? undefined : read(obj));
}

// Readiness per kind: is an observed object doing its job yet? Crossplane
// infers nothing, so every desired resource gets its verdict from here, and
// the verdict's detail is what the user reads in status.message.
import { condition, field, groupOf, isObj, kindOf, list, num, record, str, type Obj } from './kube.js';

export interface Verdict {
  ready: boolean;
  /** What the object is doing, in a few words: "3/42 replicas available". */
  detail: string;
}

const yes = (detail = 'ready'): Verdict => ({ ready: true, detail });
const no = (detail: string): Verdict => ({ ready: false, detail });

export const NOT_CREATED: Verdict = no('not created yet');

/** The controller has seen the newest spec: its status speaks of it. */
function generationObserved(obj: Obj): boolean {
  const generation = num(obj, 'metadata', 'generation');
  const observed = num(obj, 'status', 'observedGeneration');
  if (generation === undefined) return true;
  return observed !== undefined && observed >= generation;
}

function deployment(obj: Obj): Verdict {
  const want = num(obj, 'spec', 'replicas') ?? 1;
  const available = num(obj, 'status', 'availableReplicas') ?? 0;
  const updated = num(obj, 'status', 'updatedReplicas') ?? 0;
  const progressing = condition(obj, 'Progressing');
  if (progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded') {
    return no(`rollout stuck (${available}/${want} replicas available): ${progressing.message ?? progressing.reason}`);
  }
  if (!generationObserved(obj)) return no(`rollout pending (${available}/${want} replicas available)`);
  if (updated < want) return no(`${updated}/${want} replicas updated, ${available}/${want} available`);
  if (available < want) return no(`${available}/${want} replicas available`);
  if (condition(obj, 'Available')?.status === 'False') return no(`${available}/${want} replicas available, not Available yet`);
  return yes(`${available}/${want} replicas available`);
}

function statefulSet(obj: Obj): Verdict {
  const want = num(obj, 'spec', 'replicas') ?? 1;
  const ready = num(obj, 'status', 'readyReplicas') ?? 0;
  const updated = num(obj, 'status', 'updatedReplicas') ?? 0;
  if (!generationObserved(obj)) return no(`rollout pending (${ready}/${want} replicas ready)`);
  const current = str(obj, 'status', 'currentRevision');
  const update = str(obj, 'status', 'updateRevision');
  const onDelete = str(obj, 'spec', 'updateStrategy', 'type') === 'OnDelete';
  if (!onDelete && current !== undefined && update !== undefined && current !== update) {
    return no(`${updated}/${want} replicas updated, ${ready}/${want} ready`);
  }
  if (ready < want) return no(`${ready}/${want} replicas ready`);
  return yes(`${ready}/${want} replicas ready`);
}

function hasLoadBalancerAddress(obj: Obj): boolean {
  return list(obj, 'status', 'loadBalancer', 'ingress').some(
    (i) => isObj(i) && (typeof i['ip'] === 'string' || typeof i['hostname'] === 'string'),
  );
}

function service(obj: Obj): Verdict {
  const type = str(obj, 'spec', 'type') ?? 'ClusterIP';
  if (type === 'LoadBalancer') {
    return hasLoadBalancerAddress(obj) ? yes('load balancer has an address') : no('waiting for a load-balancer address');
  }
  if (type === 'ExternalName') return yes();
  return str(obj, 'spec', 'clusterIP') !== undefined ? yes() : no('waiting for a cluster IP');
}

function ingress(obj: Obj): Verdict {
  return hasLoadBalancerAddress(obj) ? yes('ingress has an address') : no('waiting for the ingress controller to assign an address');
}

function pvc(obj: Obj): Verdict {
  const phase = str(obj, 'status', 'phase') ?? 'Pending';
  return phase === 'Bound' ? yes('bound') : no(`volume ${phase}`);
}

function job(obj: Obj): Verdict {
  if (condition(obj, 'Complete')?.status === 'True') return yes('completed');
  const failed = condition(obj, 'Failed');
  if (failed?.status === 'True') return no(`failed: ${failed.message ?? failed.reason ?? 'unknown reason'}`);
  return no(`running (${num(obj, 'status', 'succeeded') ?? 0} succeeded)`);
}

function cronJob(obj: Obj): Verdict {
  // A CronJob is doing its job once it exists and is not suspended.
  return field(obj, 'spec', 'suspend') === true ? no('suspended') : yes('scheduled');
}

function hpa(obj: Obj): Verdict {
  const able = condition(obj, 'AbleToScale');
  if (able?.status === 'False') return no(`cannot scale: ${able.message ?? able.reason ?? ''}`.trim());
  if (!able) return no('waiting for the autoscaler to report');
  return yes(`${num(obj, 'status', 'currentReplicas') ?? 0} replicas`);
}

function pdb(obj: Obj): Verdict {
  return record(obj, 'status') && generationObserved(obj) ? yes() : no('waiting for the disruption controller');
}

function readyCondition(obj: Obj): Verdict | undefined {
  const ready = condition(obj, 'Ready');
  if (!ready) return undefined;
  if (ready.status === 'True') return yes();
  const why = [ready.reason, ready.message].filter(Boolean).join(': ');
  return no(why ? `not ready (${why})` : 'not ready');
}

/** CloudNativePG clusters are healthy by phase: instance counts rise before recovery ends. */
function cnpgCluster(obj: Obj): Verdict {
  const phase = str(obj, 'status', 'phase');
  if (phase === 'Cluster in healthy state') return yes('healthy');
  return no(phase ? `phase "${phase}"` : 'waiting for the CloudNativePG operator');
}

/** provider-kubernetes Object: the wrapped object must be ready too, judged as itself. */
function providerKubernetesObject(obj: Obj): Verdict {
  const own = readyCondition(obj);
  if (own && !own.ready) return own;
  const manifest = record(obj, 'status', 'atProvider', 'manifest');
  if (!manifest) return no('waiting for provider-kubernetes to observe the object');
  return judge(manifest);
}

/** Kinds that are ready as soon as they exist. */
const EXISTING_IS_READY = new Set(['Secret', 'ConfigMap', 'ServiceAccount', 'NetworkPolicy', 'Role', 'RoleBinding']);

/** Judges an observed object; undefined means it does not exist (yet). */
export function judge(observed: Obj | undefined): Verdict {
  if (!observed) return NOT_CREATED;
  const kind = kindOf(observed);
  const group = groupOf(observed);
  if (str(observed, 'metadata', 'deletionTimestamp')) return no('being deleted');
  switch (`${group}/${kind}`) {
    case 'apps/Deployment':
      return deployment(observed);
    case 'apps/StatefulSet':
      return statefulSet(observed);
    case '/Service':
      return service(observed);
    case '/PersistentVolumeClaim':
      return pvc(observed);
    case 'batch/Job':
      return job(observed);
    case 'batch/CronJob':
      return cronJob(observed);
    case 'autoscaling/HorizontalPodAutoscaler':
      return hpa(observed);
    case 'policy/PodDisruptionBudget':
      return pdb(observed);
    case 'networking.k8s.io/Ingress':
      return ingress(observed);
    case 'postgresql.cnpg.io/Cluster':
      return cnpgCluster(observed);
    case 'kubernetes.crossplane.io/Object':
    case 'kubernetes.m.crossplane.io/Object':
      return providerKubernetesObject(observed);
  }
  if (EXISTING_IS_READY.has(kind) && (group === '' || group.endsWith('k8s.io'))) return yes();
  // Managed resources and anything else that speaks the Ready condition.
  return readyCondition(observed) ?? (group.includes('.') && !group.endsWith('k8s.io') ? no('waiting for a Ready condition') : yes());
}

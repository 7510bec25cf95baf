// A small stand-in for the cluster side of a reconcile: it takes the desired
// state of a response as Crossplane would apply it (what is left out is
// deleted) and lets a test decide how far each controller has got.
import { type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
import { buildRequest, RESOURCE_NAME_ANNOTATION } from '../../src/render.js';
import { runFunction } from '../../src/function.js';
import { isProviderKubernetesObject as isWrapper } from '../../src/kinds/index.js';

export class Loop {
  /** The objects as the cluster has them, by composition-resource name (for a claim: what the Objects wrap). */
  readonly observed = new Map<string, Obj>();
  /** What Crossplane composed where it differs: the provider-kubernetes Object around a claim's workload. */
  private readonly wrappers = new Map<string, Obj>();
  xr: Obj;
  last: RunFunctionResponse | undefined;

  /** `input`: the Composition step's Input, sent with every call (a test may change it: a Composition edited). */
  constructor(
    xr: Obj,
    public input?: Obj,
  ) {
    this.xr = structuredClone(xr);
  }

  /** Observed composed resources as Crossplane sends them: an Object reports what it wraps, as provider-kubernetes does. */
  composed(): Obj[] {
    return [...this.observed].map(([key, obj]) => {
      const wrapper = this.wrappers.get(key);
      if (!wrapper) return obj;
      return {
        ...wrapper,
        status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Available' }], atProvider: { manifest: obj } },
      };
    });
  }

  /** One call of the function against the current observed state. */
  call(): RunFunctionResponse {
    const rsp = runFunction(buildRequest(this.xr, this.composed(), [], this.input));
    this.last = rsp;
    return rsp;
  }

  /** Applies a response as Crossplane does: desired objects are written, omitted ones deleted, status copied. */
  apply(rsp: RunFunctionResponse = this.last!): void {
    if (rsp.results.some((r) => r.severity === Severity.SEVERITY_FATAL)) return; // Fatal: nothing changes.
    const desired = rsp.desired?.resources ?? {};
    for (const key of [...this.observed.keys()]) {
      if (!(key in desired)) {
        this.observed.delete(key);
        this.wrappers.delete(key);
      }
    }
    for (const [key, res] of Object.entries(desired)) {
      let obj = structuredClone(res.resource ?? {}) as Obj;
      if (isWrapper(obj)) {
        this.wrappers.set(key, {
          ...obj,
          metadata: { ...(obj['metadata'] as Obj), annotations: { [RESOURCE_NAME_ANNOTATION]: key } },
        });
        obj = structuredClone(((obj['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj);
      }
      const before = this.observed.get(key);
      const meta = (obj['metadata'] ?? {}) as Obj;
      const generation = Number((before?.['metadata'] as Obj | undefined)?.['generation'] ?? 0);
      const changed = !before || JSON.stringify(before['spec']) !== JSON.stringify(obj['spec']);
      obj['metadata'] = {
        ...meta,
        generation: changed ? generation + 1 : generation,
        annotations: { [RESOURCE_NAME_ANNOTATION]: key },
      };
      if (before?.['status'] !== undefined) obj['status'] = before['status'];
      if (obj['kind'] === 'Service') obj['spec'] = { clusterIP: '10.0.0.1', ...(obj['spec'] as Obj) };
      this.observed.set(key, obj);
    }
    // As Crossplane writes it: the status the function returned, the conditions it returned merged by type over
    // the ones the XR had (one not returned stays), and Ready from the composite's readiness.
    const status = (rsp.desired?.composite?.resource as Obj | undefined)?.['status'] as Obj | undefined;
    const had = ((this.xr['status'] as Obj | undefined)?.['conditions'] ?? []) as Obj[];
    const byType = new Map<string, Obj>(had.map((c) => [String(c['type']), c]));
    for (const c of rsp.conditions)
      byType.set(c.type, {
        type: c.type,
        status: c.status === 2 ? 'True' : 'False',
        reason: c.reason,
        message: c.message,
      });
    const ready = rsp.desired?.composite?.ready;
    if (ready === 1 || ready === 2)
      byType.set('Ready', {
        type: 'Ready',
        status: ready === 1 ? 'True' : 'False',
        reason: ready === 1 ? 'Available' : 'Creating',
      });
    if (status) this.xr = { ...this.xr, status: { ...status, conditions: [...byType.values()] } };
  }

  /** A Deployment's controller has brought `available` replicas up for its current spec. */
  rollOut(key: string, available?: number): void {
    const obj = this.observed.get(key);
    if (!obj) throw new Error(`no observed ${key}`);
    const spec = (obj['spec'] ?? {}) as Obj;
    const want = Number(spec['replicas'] ?? 1);
    const n = available ?? want;
    const generation = Number((obj['metadata'] as Obj)['generation'] ?? 1);
    obj['status'] = {
      observedGeneration: generation,
      replicas: want,
      updatedReplicas: want,
      readyReplicas: n,
      availableReplicas: n,
      conditions: [{ type: 'Available', status: n >= want ? 'True' : 'False', reason: 'MinimumReplicasAvailable' }],
    };
  }

  /** Every other kind's controller catches up (PDB status and the like). */
  settle(): void {
    for (const obj of this.observed.values()) {
      const generation = Number((obj['metadata'] as Obj)['generation'] ?? 1);
      if (obj['kind'] === 'PodDisruptionBudget') obj['status'] = { observedGeneration: generation };
      if (obj['kind'] === 'HorizontalPodAutoscaler')
        obj['status'] = { currentReplicas: 1, conditions: [{ type: 'AbleToScale', status: 'True' }] };
      if (obj['kind'] === 'Ingress') obj['status'] = { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } };
    }
  }

  status(): Obj {
    return ((this.last?.desired?.composite?.resource as Obj | undefined)?.['status'] ?? {}) as Obj;
  }

  desiredKeys(): string[] {
    return Object.keys(this.last?.desired?.resources ?? {}).sort();
  }

  desired(key: string): Obj | undefined {
    return this.last?.desired?.resources[key]?.resource as Obj | undefined;
  }
}

// The Widget blueprint: a web workload released blue/green.
//
// Every decision is read off observed state, so a restarted function (or a
// second replica) takes the same step: the Service's observed selector says
// which color is live, the new color's Deployment says whether it is ready to
// take traffic, and the old color leaves only after the switch is observed.
import type {
  V1Deployment,
  V1Ingress,
  V1PodDisruptionBudget,
  V1PodSecurityContext,
  V1Service,
  V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import { type WidgetSpec, widgetSpecSchema } from '../generated/schemas.js';
import { condition, field, isObj, num, record, str, type Obj } from '../kube.js';
import { dnsLabel } from '../names.js';
import { judge, type Verdict } from '../kinds/index.js';
import type { ValidateFunction } from 'ajv';
import * as validators from '../generated/validators.js';
import { SpecError } from '../errors.js';
import { specValidator } from '../spec/validate.js';
import { entry } from './manifest.js';
import {
  type Blueprint,
  type BlueprintInput,
  type Desired,
  firstBlocking,
  type Owner,
  type Plan,
  type Summary,
} from './blueprint.js';

export const COLOR_LABEL = 'function-platform.dev/color';
const INSTANCE_LABEL = 'app.kubernetes.io/instance';
/** The default image reads its port from this variable. */
const DEFAULT_IMAGE_PORT_ENV = 'WHOAMI_PORT_NUMBER';
const DEFAULT_IMAGE = String(widgetSpecSchema.properties.image.default);
/** Seconds a leaving pod keeps serving: kube-proxy applies a Service's change within a second or two. */
const PRESTOP_SECONDS = 5;

export const KEYS = {
  deployment: (color: string) => `deployment-${color}`,
  service: 'service',
  pdb: 'pdb',
  hpa: 'hpa',
  ingress: 'ingress',
  certificate: 'certificate',
} as const;

const validate = specValidator<WidgetSpec>(validators.widget as ValidateFunction, 'spec', (spec) =>
  checkWidgetRules(spec),
);

/** The rules the XRD states in CEL, which a JSON Schema validator cannot evaluate. */
export function checkWidgetRules(spec: WidgetSpec): void {
  const problems: string[] = [];
  if (spec.autoscale && spec.autoscale.maxSize < spec.size) {
    problems.push(
      `spec.autoscale.maxSize is ${spec.autoscale.maxSize}; spec.autoscale.maxSize must be at least spec.size (${spec.size})`,
    );
  }
  for (const name of Object.keys(spec.env ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      problems.push(
        `spec.env[${JSON.stringify(name)}]: env names must be letters, digits and underscores, not starting with a digit`,
      );
    }
  }
  if (problems.length > 0) throw new SpecError(problems);
}

/** The name workloads are known by: the claim's when there is one, else the XR's. */
export function appName(owner: Owner): string {
  return owner.claim?.name ?? owner.name;
}

function labels(owner: Owner, extra: Record<string, string> = {}): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'widget',
    [INSTANCE_LABEL]: appName(owner),
    'app.kubernetes.io/managed-by': 'function-platform',
    ...extra,
  };
}

function meta(owner: Owner, name: string, extra: Record<string, string> = {}): Obj {
  return { name, namespace: owner.namespace, labels: labels(owner, extra) };
}

function deploymentName(owner: Owner, color: string): string {
  return dnsLabel(appName(owner), color);
}

function serviceName(owner: Owner): string {
  return dnsLabel(appName(owner));
}

function containerEnv(spec: WidgetSpec): Array<{ name: string; value: string }> {
  const env: Record<string, string> = { PORT: String(spec.port) };
  if (spec.image === DEFAULT_IMAGE) env[DEFAULT_IMAGE_PORT_ENV] = String(spec.port);
  Object.assign(env, spec.env ?? {});
  return Object.keys(env)
    .sort()
    .map((name) => ({ name, value: env[name] as string }));
}

/** Typed while built (the Kubernetes models catch a misspelt field at compile time), plain JSON after. */
const plain = (obj: object): Obj => obj as Obj;

function deployment(owner: Owner, spec: WidgetSpec, color: string, replicas: number | undefined): Obj {
  const selector = colorSelector(owner, color);
  // The restricted Pod Security Standard: never root. A user's image runs as its own (numeric, non-root) USER, which
  // the kubelet checks before starting it; ours is pinned to a uid.
  const podSecurity: V1PodSecurityContext = { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };
  if (spec.image === DEFAULT_IMAGE) Object.assign(podSecurity, { runAsUser: 65532, runAsGroup: 65532 });
  const probe = { tcpSocket: { port: 'http' }, periodSeconds: 10, failureThreshold: 3 };
  const d: V1Deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(owner, deploymentName(owner, color), { [COLOR_LABEL]: color }),
    spec: {
      ...(replicas === undefined ? {} : { replicas }),
      revisionHistoryLimit: 5,
      selector: { matchLabels: selector },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: '25%' } },
      template: {
        metadata: { labels: labels(owner, { [COLOR_LABEL]: color }) },
        spec: {
          securityContext: podSecurity,
          containers: [
            {
              name: 'web',
              image: spec.image,
              ports: [{ name: 'http', containerPort: spec.port, protocol: 'TCP' }],
              env: containerEnv(spec),
              resources: {
                requests: { cpu: spec.resources.cpu, memory: spec.resources.memory },
                limits: { memory: spec.resources.memory },
              },
              readinessProbe: { ...probe, initialDelaySeconds: 2 },
              livenessProbe: { ...probe, initialDelaySeconds: 10 },
              // A pod leaving (the old color after a cutover, a scale-down) keeps
              // serving while kube-proxy on every node drops it from the Service's
              // rules: a request routed to it just before must still be answered.
              // The kubelet sleeps itself, so any image works, even one with no shell.
              lifecycle: { preStop: { sleep: { seconds: PRESTOP_SECONDS } } },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: spec.image === DEFAULT_IMAGE,
                capabilities: { drop: ['ALL'] },
              },
            },
          ],
        },
      },
    },
  };
  return plain(d);
}

/**
 * The old color's Deployment during a cutover: exactly what is running now,
 * so changing color and image together never touches the live pods.
 */
function keepAsObserved(observed: Obj): Obj {
  const template = record(observed, 'spec', 'template');
  const templateMeta = record(template, 'metadata');
  const spec = { ...record(observed, 'spec') };
  if (template && templateMeta) {
    const { creationTimestamp: _ignored, ...cleanMeta } = templateMeta;
    spec['template'] = { ...template, metadata: cleanMeta };
  }
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: str(observed, 'metadata', 'name'),
      namespace: str(observed, 'metadata', 'namespace'),
      labels: record(observed, 'metadata', 'labels') ?? {},
    },
    spec,
  };
}

function service(owner: Owner, spec: WidgetSpec, color: string): Obj {
  return plain({
    ...shared(owner, 'v1', 'Service'),
    spec: {
      type: 'ClusterIP',
      selector: colorSelector(owner, color),
      ports: [{ name: 'http', port: spec.port, targetPort: 'http', protocol: 'TCP' }],
    },
  } satisfies V1Service);
}

/** The head of the objects a Widget has one of, all named after it. */
function shared<A extends string, K extends string>(owner: Owner, apiVersion: A, kind: K) {
  return { apiVersion, kind, metadata: meta(owner, serviceName(owner)) };
}

/** The pods of one color. */
function colorSelector(owner: Owner, color: string): Record<string, string> {
  return { [INSTANCE_LABEL]: appName(owner), [COLOR_LABEL]: color };
}

function pdb(owner: Owner, color: string): Obj {
  return plain({
    ...shared(owner, 'policy/v1', 'PodDisruptionBudget'),
    spec: {
      maxUnavailable: 1,
      selector: { matchLabels: colorSelector(owner, color) },
    },
  } satisfies V1PodDisruptionBudget);
}

function hpa(owner: Owner, spec: WidgetSpec, color: string): Obj {
  const autoscale = spec.autoscale!;
  return plain({
    ...shared(owner, 'autoscaling/v2', 'HorizontalPodAutoscaler'),
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: deploymentName(owner, color) },
      minReplicas: spec.size,
      maxReplicas: autoscale.maxSize,
      metrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: autoscale.targetCPUPercent } },
        },
      ],
    },
  } satisfies V2HorizontalPodAutoscaler);
}

/** The Secret cert-manager keeps the host's certificate in: one name for the Widget's whole life. */
export function tlsSecretName(owner: Owner): string {
  return dnsLabel(appName(owner), 'tls');
}

/**
 * The host's certificate, issued by the ClusterIssuer into the Secret the
 * Ingress serves. A Certificate of our own rather than the ingress-shim's
 * annotation: its Ready condition is what the Widget's url waits for.
 */
function certificate(owner: Owner, host: string, clusterIssuer: string): Obj {
  return {
    ...shared(owner, 'cert-manager.io/v1', 'Certificate'),
    spec: {
      secretName: tlsSecretName(owner),
      dnsNames: [host],
      issuerRef: { group: 'cert-manager.io', kind: 'ClusterIssuer', name: clusterIssuer },
      usages: ['digital signature', 'key encipherment', 'server auth'],
    },
  };
}

function ingress(owner: Owner, host: string, ingressClassName: string | undefined, https: boolean): Obj {
  return plain({
    ...shared(owner, 'networking.k8s.io/v1', 'Ingress'),
    spec: {
      ...(ingressClassName ? { ingressClassName } : {}),
      ...(https ? { tls: [{ hosts: [host], secretName: tlsSecretName(owner) }] } : {}),
      rules: [
        {
          host,
          http: {
            paths: [
              {
                path: '/',
                pathType: 'Prefix',
                backend: { service: { name: serviceName(owner), port: { name: 'http' } } },
              },
            ],
          },
        },
      ],
    },
  } satisfies V1Ingress);
}

/** The color an observed Service sends traffic to. */
function selectedColor(svc: Obj | undefined): string | undefined {
  const color = field(svc, 'spec', 'selector', COLOR_LABEL);
  return typeof color === 'string' ? color : undefined;
}

/** Where a Widget stands in its release, derived from observed state alone. */
export interface Release {
  /** The color the observed Service selects; undefined before the Service exists. */
  live: string | undefined;
  /** The color requested by the spec. */
  wanted: string;
  /** The old live color still kept during a cutover. */
  draining: string | undefined;
  /** The color the desired Service selects on this call. */
  serve: string;
  /** The wanted color's Deployment: available replicas and whether it is at full size. */
  wantedAvailable: number;
  wantedAtFullSize: boolean;
  /**
   * Another color's Deployment still there once the Service serves the wanted
   * one: it goes only after the Widget shows READY on the wanted color.
   */
  retiring: string | undefined;
}

/**
 * Whether the Widget, as observed, shows the release on `color` settled: its
 * status names that color, and Crossplane's READY agrees with status.ready
 * (the conditions have caught up with the status, see src/function.ts).
 */
function settledOn(xr: Obj | undefined, color: string): boolean {
  const ready = record(xr, 'status')?.['ready'];
  return (
    str(xr, 'status', 'activeColor') === color &&
    typeof ready === 'boolean' &&
    (condition(xr, 'Ready')?.status === 'True') === ready
  );
}

export function release(spec: WidgetSpec, observed: ReadonlyMap<string, Obj>, xr?: Obj): Release {
  const wanted = spec.color;
  const live = selectedColor(observed.get(KEYS.service));
  const wantedDeployment = observed.get(KEYS.deployment(wanted));
  const wantedAvailable = num(wantedDeployment, 'status', 'availableReplicas') ?? 0;
  const wantedAtFullSize = judge(wantedDeployment).ready && wantedAvailable >= spec.size;
  // A cutover exists only while the live color still has pods to serve from.
  const draining = live !== undefined && live !== wanted && observed.has(KEYS.deployment(live)) ? live : undefined;
  const serve = draining === undefined || wantedAtFullSize ? wanted : draining;
  // After the switch, the other color is deleted only once the Widget shows it settled on the wanted one:
  // deleting it sets off a burst of changes (its pods, its ReplicaSet, its own status), each starting a
  // reconcile; coming while READY turned, they had Crossplane write back the READY it had read a moment before
  // (crossplane/crossplane#7062). Afterwards they find nothing of the Widget's to change.
  const others = [...observed.keys()]
    .filter((k) => k.startsWith('deployment-') && k !== KEYS.deployment(wanted))
    .map((k) => k.slice('deployment-'.length));
  const retiring = draining === undefined && live === wanted && !settledOn(xr, wanted) ? others[0] : undefined;
  return { live, wanted, draining, serve, wantedAvailable, wantedAtFullSize, retiring };
}

/** A Widget's call after phase one: the validated spec and where its release stands. */
export interface ResolvedWidget {
  input: BlueprintInput<WidgetSpec>;
  release: Release;
}

function compose({ input, release: r }: ResolvedWidget): Plan {
  const { owner, spec, observed } = input;
  const resources: Desired[] = [];
  // With an autoscaler the live Deployment's replicas belong to it; a color
  // that is not live yet is started at full size explicitly.
  const replicasFor = (color: string) => (spec.autoscale && color === r.live ? undefined : spec.size);
  resources.push({ key: KEYS.deployment(r.wanted), object: deployment(owner, spec, r.wanted, replicasFor(r.wanted)) });
  if (r.draining !== undefined) {
    resources.push({
      key: KEYS.deployment(r.draining),
      object: keepAsObserved(observed.get(KEYS.deployment(r.draining))!),
    });
  }
  // Kept as it is until the Widget shows READY on the wanted color; it serves no traffic, so it holds nothing up.
  if (r.retiring !== undefined)
    resources.push({
      key: KEYS.deployment(r.retiring),
      object: keepAsObserved(observed.get(KEYS.deployment(r.retiring))!),
      independent: true,
    });
  resources.push({ key: KEYS.service, object: service(owner, spec, r.serve) });
  // Budgets and the autoscaler follow the color that serves, and move with the Service in the same apply: moved
  // a call later, the budget's new selector was not yet observed by the disruption controller on the very call
  // that saw the switch, and the Widget went READY False again just after it went True (seen under real
  // Crossplane), spending watch events and status writes a cutover does not need.
  const serving = r.serve;
  // The budget comes once the serving color is available at full size, and then stays. Made with the first
  // Deployment, it was rewritten by the disruption controller for every pod that came up (41 status writes for
  // the seed's 42 replicas, seen under real Crossplane), each a watch event the circuit breaker counts: most of
  // a new Widget's budget. Before the first rollout is done there is nothing to keep from disruption.
  const servingUp = judge(observed.get(KEYS.deployment(serving))).ready;
  if (spec.size >= 2 && (observed.has(KEYS.pdb) || servingUp))
    resources.push({ key: KEYS.pdb, object: pdb(owner, serving) });
  if (spec.autoscale) resources.push({ key: KEYS.hpa, object: hpa(owner, spec, serving) });
  if (spec.host) {
    const issuer = spec.tls?.clusterIssuer;
    resources.push({
      key: KEYS.ingress,
      object: ingress(owner, spec.host, spec.ingressClassName, issuer !== undefined),
    });
    if (issuer !== undefined) resources.push({ key: KEYS.certificate, object: certificate(owner, spec.host, issuer) });
  }
  return { resources };
}

function status({ input, release: r }: ResolvedWidget, plan: Plan, verdicts: ReadonlyMap<string, Verdict>): Summary {
  const { owner, spec, observed } = input;
  // https only once the certificate is in its Secret: before, a client would meet the ingress controller's default one.
  const certificateReady = verdicts.get(KEYS.certificate)?.ready === true;
  const url = spec.host
    ? `${spec.tls && certificateReady ? 'https' : 'http'}://${spec.host}`
    : `http://${serviceName(owner)}.${owner.namespace}.svc.cluster.local:${spec.port}`;
  const activeDeployment = r.live === undefined ? undefined : observed.get(KEYS.deployment(r.live));
  const status: Obj = { url };
  if (r.live !== undefined) status['activeColor'] = r.live;
  status['availableReplicas'] = num(activeDeployment, 'status', 'availableReplicas') ?? 0;

  const warnings: Summary['warnings'] = [];
  for (const { key, object } of plan.resources) {
    const v = verdicts.get(key);
    if (v?.state === 'stuck') {
      warnings.push({
        reason: 'RolloutStuck',
        message: `Deployment ${String(field(object, 'metadata', 'name'))}: ${v.detail}`,
      });
    }
  }

  if (r.draining !== undefined) {
    const progress = `${r.wanted} ${r.wantedAvailable}/${spec.size} available`;
    const message = r.wantedAtFullSize
      ? `switching traffic from ${r.draining} to ${r.wanted}: ${progress}, waiting for Service ${serviceName(owner)} to follow`
      : `switching traffic from ${r.draining} to ${r.wanted}: ${progress}; ${r.draining} keeps serving until then`;
    // The switch is seconds away once the new color is at full size; until then its pods' readiness sets the
    // pace (a stuck rollout must not be called every 2 s for ever).
    const soon = r.wantedAtFullSize && warnings.length === 0;
    return { ready: false, message, reason: 'SwitchingTraffic', status, warnings, ...(soon ? { soon } : {}) };
  }
  const blocking = firstBlocking(plan, verdicts);
  if (blocking?.key === KEYS.certificate && spec.tls) {
    // Everything else serves: only HTTPS is missing. Not Ready, since the Widget was asked to serve HTTPS, and an
    // Ingress with a TLS section already sends plain HTTP to HTTPS, where the controller's default certificate waits.
    const stuckIssuing = blocking.verdict.state === 'stuck';
    if (stuckIssuing)
      warnings.push({
        reason: 'CertificateNotIssued',
        message: `${blocking.message}; see kubectl describe certificate -n ${owner.namespace} ${serviceName(owner)}`,
      });
    return {
      ready: false,
      message: `waiting for the certificate of ${spec.host} (ClusterIssuer ${spec.tls.clusterIssuer}, Secret ${tlsSecretName(owner)}): ${blocking.message}; serving ${url} until it is issued`,
      reason: stuckIssuing ? 'CertificateNotIssued' : 'WaitingForCertificate',
      status,
      warnings,
    };
  }
  const blocker = blocking?.message;
  if (blocker !== undefined) {
    const liveKey = KEYS.deployment(r.wanted);
    const rolling = !(verdicts.get(liveKey)?.ready ?? false);
    return {
      ready: false,
      message: blocker,
      reason: warnings.length > 0 ? 'RolloutStuck' : rolling ? 'RollingOut' : 'Provisioning',
      status,
      warnings,
    };
  }
  if (r.live !== r.wanted) {
    // Every resource is ready but the Service has not been observed on the wanted color.
    return {
      ready: false,
      message: `waiting for Service ${serviceName(owner)} to select ${r.wanted}`,
      reason: 'SwitchingTraffic',
      status,
      warnings,
      ...(warnings.length === 0 ? { soon: true } : {}),
    };
  }
  const replicas = num(activeDeployment, 'status', 'availableReplicas') ?? 0;
  return {
    ready: true,
    message: `available: ${replicas} ${replicas === 1 ? 'replica' : 'replicas'} of ${r.wanted} serving at ${url}`,
    reason: 'Available',
    status,
    warnings,
    // The old color leaves on the call that reads this answer's READY back.
    ...(r.retiring !== undefined ? { soon: true } : {}),
  };
}

export const widget: Blueprint<ResolvedWidget> = {
  ...entry('widget', widgetSpecSchema),
  resolve(raw, ctx) {
    // The platform's class and issuer (the step's Input) where the Widget names none; its own tls is taken whole.
    const platform = ctx.defaults?.widget;
    const layered = isObj(raw) ? { ...raw } : raw;
    if (isObj(layered)) {
      if (layered['ingressClassName'] === undefined && platform?.ingressClassName)
        layered['ingressClassName'] = platform.ingressClassName;
      if (layered['tls'] === undefined && platform?.tls) layered['tls'] = { ...platform.tls };
    }
    const spec = validate(layered);
    return { input: { ...ctx, spec }, release: release(spec, ctx.observed, ctx.xr) };
  },
  compose: (resolved) => compose(resolved),
  status: (resolved, _facts, plan, verdicts) => status(resolved, plan, verdicts),
};

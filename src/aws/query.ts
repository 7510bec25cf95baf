// Which AWS questions a request raises: only a Database on AWS whose step has
// AWS credentials raises any. Built from the same pure helpers the blueprint
// uses, so the identifier and bucket asked about are the ones composed.
import type { RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import type { BlueprintInput } from '../blueprints/blueprint.js';
import { AWS_KEYS, bucketName, rdsIdentifier } from '../blueprints/database/aws.js';
import { INSTANCE_CLASSES } from '../blueprints/database/engine.js';
import { database, resolveFor } from '../blueprints/database/index.js';
import { blueprintFor } from '../dispatch.js';
import { isObj, str, type Obj } from '../kube.js';
import { awsCredentials } from './credentials.js';
import type { AwsQuery } from './facts.js';

/** The question for this request, or undefined when there is none (or the spec is invalid: the pipeline says why). */
export function awsQuery(req: RunFunctionRequest, base: Omit<BlueprintInput<unknown>, 'spec'>): AwsQuery | undefined {
  const credentials = awsCredentials(req);
  if (!credentials) return undefined;
  const input = isObj(req.input) ? (req.input as Obj) : undefined;
  let blueprint;
  try {
    blueprint = blueprintFor(str(base.xr, 'kind') ?? '', input);
  } catch {
    return undefined;
  }
  if (blueprint !== database) return undefined;
  let spec;
  try {
    spec = resolveFor(database.parse(base.xr['spec'], base), base);
  } catch {
    return undefined;
  }
  if (spec.placement !== 'aws' || !spec.aws?.region) return undefined;
  const db = { ...base, spec } as BlueprintInput<typeof spec>;
  const endpoint = (typeof input?.['awsEndpoint'] === 'string' ? input['awsEndpoint'] : undefined) ?? credentials.endpoint;
  return {
    cacheKey: base.owner.uid || `${base.owner.namespace}/${base.owner.name}`,
    region: spec.aws.region,
    credentials,
    ...(endpoint ? { endpoint } : {}),
    beforeCreation: !base.observed.has(AWS_KEYS.instance),
    identifier: rdsIdentifier(db),
    ...(spec.backup.enabled || base.observed.has(AWS_KEYS.bucket) ? { bucket: bucketName(db) } : {}),
    engine: spec.engine,
    version: spec.version,
    instanceClass: spec.aws.instanceClass ?? INSTANCE_CLASSES[spec.size],
    instanceClassField: spec.aws.instanceClass ? 'spec.aws.instanceClass' : `spec.size (${spec.size} is ${INSTANCE_CLASSES[spec.size]})`,
  };
}

// What a Database on AWS wants to know from AWS before it composes, built from
// the same pure helpers compose uses, so the identifier asked about is the one
// composed.
import type { AwsQuestion } from '../../facts.js';
import { AWS_KEYS, rdsIdentifier } from './aws.js';
import type { DatabaseInput, ResolvedSpec } from './common.js';
import { INSTANCE_CLASSES } from './engine.js';

export function awsQuestion(input: DatabaseInput & { spec: ResolvedSpec }): AwsQuestion | undefined {
  const spec = input.spec;
  if (spec.placement !== 'aws' || !spec.aws?.region) return undefined;
  return {
    cacheKey: input.owner.uid || `${input.owner.namespace}/${input.owner.name}`,
    region: spec.aws.region,
    beforeCreation: !input.observed.has(AWS_KEYS.instance),
    identifier: rdsIdentifier(input),
    engine: spec.engine,
    version: spec.version,
    instanceClass: spec.aws.instanceClass ?? INSTANCE_CLASSES[spec.size],
    instanceClassField: spec.aws.instanceClass
      ? 'spec.aws.instanceClass'
      : `spec.size (${spec.size} is ${INSTANCE_CLASSES[spec.size]})`,
  };
}

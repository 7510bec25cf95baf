// The function as a step of a Crossplane Operation (ops.crossplane.io): the
// Input names the operation (input.operation), the request carries no
// composite, and the answer is what Crossplane applies once the step ends
// (desired resources, never deleted by it) and the step's output, which the
// Operation's status keeps for a person to read. A Composition step that names
// an operation, or an Operation step that names none, is refused by name.
import { Ready, type RunFunctionRequest, type RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import type { Input } from '../generated/schemas.js';
import { FatalError } from '../errors.js';
import { isObj } from '../kube.js';
import { requiredResources, selectorOf } from '../request.js';
import { normal, warning } from '../results.js';
import { planBackupNow } from './backup-now.js';

/** Whether the step's Input names an operation: the call is an Operation's. */
export function namesOperation(req: RunFunctionRequest): boolean {
  return isObj(req.input) && req.input['operation'] !== undefined;
}

/** One Operation step's answer, from its validated Input. Throws a FatalError for what cannot be run. */
export function runOperation(req: RunFunctionRequest, input: Input, now: Date): RunFunctionResponse {
  if (isObj(req.observed?.composite?.resource))
    throw new FatalError(
      'input.operation is for a step of an Operation or CronOperation (ops.crossplane.io), not of a Composition: take it out of this Composition',
      'OperationInComposition',
    );
  const backupNow = input.operation?.backupNow;
  if (!backupNow)
    throw new FatalError('input.operation names no operation: set input.operation.backupNow', 'NoOperation');
  const rsp: RunFunctionResponse = {
    meta: { tag: req.meta?.tag ?? '' },
    // What earlier steps asked for is applied too: carried through untouched.
    desired: { composite: undefined, resources: { ...(req.desired?.resources ?? {}) } },
    results: [],
    context: req.context,
    conditions: [],
    requirements: undefined,
  };
  const plan = planBackupNow(backupNow, requiredResources(req), now);
  const selectors = Object.fromEntries(Object.entries(plan.requirements).map(([name, r]) => [name, selectorOf(r)]));
  rsp.requirements = { extraResources: {}, resources: selectors, schemas: {} };
  if (!plan.done) return rsp;
  for (const { key, object } of plan.done.backups)
    rsp.desired!.resources[key] = {
      resource: object,
      connectionDetails: {},
      ready: Ready.READY_UNSPECIFIED,
    };
  rsp.output = plan.done.output;
  rsp.results.push(
    plan.done.nothing ? warning('NothingMatched', plan.done.summary) : normal('BackupsAsked', plan.done.summary),
  );
  return rsp;
}

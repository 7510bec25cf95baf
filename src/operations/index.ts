// The function as a step of a Crossplane Operation (ops.crossplane.io): the
// Input names the operation (input.operation), the request carries no
// composite, and the answer is what Crossplane applies once the step ends
// (desired resources, never deleted by it) and the step's output, which the
// Operation's status keeps for a person to read. A Composition step that names
// an operation, or an Operation step that names none, is refused by name.
import {
  Ready,
  type Result,
  type RunFunctionRequest,
  type RunFunctionResponse,
} from '@crossplane-org/function-sdk-typescript';
import type { Requirement } from '../blueprints/blueprint.js';
import type { Input } from '../generated/schemas.js';
import { FatalError } from '../errors.js';
import { isObj, type Obj } from '../kube.js';
import { requiredResources, selectorOf } from '../request.js';
import { normal, warning } from '../results.js';
import { type BackupNowPlan, planBackupNow } from './backup-now.js';
import { type UpgradePlan, planUpgrade } from './upgrade.js';

/** Whether the step's Input names an operation: the call is an Operation's. */
export function namesOperation(req: RunFunctionRequest): boolean {
  return isObj(req.input) && req.input['operation'] !== undefined;
}

/** What an operation asks of Crossplane, and once answered, what it applies, outputs and says. */
interface Answer {
  requirements: Record<string, Requirement>;
  done?: { apply: Array<{ key: string; object: Obj }>; output: Obj; result: Result };
}

function backupNowAnswer(plan: BackupNowPlan): Answer {
  if (!plan.done) return { requirements: plan.requirements };
  const { backups, output, summary, nothing } = plan.done;
  return {
    requirements: plan.requirements,
    done: {
      apply: backups,
      output,
      result: nothing ? warning('NothingMatched', summary) : normal('BackupsAsked', summary),
    },
  };
}

function upgradeAnswer(plan: UpgradePlan): Answer {
  if (!plan.done) return { requirements: plan.requirements };
  const { patches, output, result } = plan.done;
  const said =
    result.severity === 'warning' ? warning(result.reason, result.message) : normal(result.reason, result.message);
  return { requirements: plan.requirements, done: { apply: patches, output, result: said } };
}

/** One Operation step's answer, from its validated Input. Throws a FatalError for what cannot be run. */
export function runOperation(req: RunFunctionRequest, input: Input, now: Date): RunFunctionResponse {
  if (isObj(req.observed?.composite?.resource))
    throw new FatalError(
      'input.operation is for a step of an Operation or CronOperation (ops.crossplane.io), not of a Composition: take it out of this Composition',
      'OperationInComposition',
    );
  const { backupNow, upgrade } = input.operation ?? {};
  if (backupNow && upgrade)
    throw new FatalError(
      'input.operation names two operations (backupNow and upgrade): one step runs one; give each its own step',
      'TwoOperations',
    );
  if (!backupNow && !upgrade)
    throw new FatalError(
      'input.operation names no operation: set input.operation.backupNow or input.operation.upgrade',
      'NoOperation',
    );
  const rsp: RunFunctionResponse = {
    meta: { tag: req.meta?.tag ?? '' },
    // What earlier steps asked for is applied too: carried through untouched.
    desired: { composite: undefined, resources: { ...(req.desired?.resources ?? {}) } },
    results: [],
    context: req.context,
    conditions: [],
    requirements: undefined,
  };
  const required = requiredResources(req);
  const answer = upgrade
    ? upgradeAnswer(planUpgrade(upgrade, required))
    : backupNowAnswer(planBackupNow(backupNow!, required, now));
  rsp.requirements = {
    extraResources: {},
    resources: Object.fromEntries(Object.entries(answer.requirements).map(([name, r]) => [name, selectorOf(r)])),
    schemas: {},
  };
  if (!answer.done) return rsp;
  for (const { key, object } of answer.done.apply)
    rsp.desired!.resources[key] = { resource: object, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED };
  rsp.output = answer.done.output;
  rsp.results.push(answer.done.result);
  return rsp;
}

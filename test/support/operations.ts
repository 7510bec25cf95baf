// Requests as Crossplane's Operation reconciler sends them to a step: no
// composite, the step's Input, the required resources answered so far.
import type { RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
import type { Required } from './database.js';

/** The step's Input naming one operation. */
export const operationInput = (operation: Obj): Obj => ({
  apiVersion: 'platform.fn.example.com/v1beta1',
  kind: 'Input',
  operation,
});

/** One call of an Operation's step; with `composite`, the same Input sent by a Composition instead. */
export const operationCall = (input: Obj, required: Required = {}, composite?: Obj): RunFunctionRequest =>
  ({
    meta: { tag: 'op', capabilities: [] },
    input,
    requiredResources: required,
    desired: { resources: {} },
    ...(composite ? { observed: { composite: { resource: composite, connectionDetails: {} }, resources: {} } } : {}),
  }) as unknown as RunFunctionRequest;

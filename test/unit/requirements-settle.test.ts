// What a settled Database costs a reconcile. Crossplane (v2.2.1,
// internal/xfn/required_resources.go) calls a function, fetches what it asks
// for, and calls it again until two answers in a row ask for the same; its
// first comparison is against nothing, so a function that asks for anything
// is called twice a reconcile at least. A settled Database of every
// placement must stop there: its requirements may not depend on their own
// answers, or every reconcile of every Database costs a third call. A
// STAND-IN for that loop runs here (the comparison and the fetch, from the
// answers this test holds); the real loop runs in the e2e and bench:scale.
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { describe, test } from 'node:test';
import { Ready, type RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
import {
  asObserved,
  CNPG_CRD_OBJECT,
  call,
  databaseXr,
  fatalOf,
  type Required,
  storeCredentials,
} from '../support/database.js';
import { healthyStatus } from '../support/observed-state.js';

/** What the cluster holds for each requirement name (anything else: looked, found nothing). */
const HELD: Record<string, Obj[]> = {
  'backup-store-credentials': [storeCredentials()],
  'cnpg-crd': [CNPG_CRD_OBJECT],
};

function fetched(rsp: RunFunctionResponse): Required {
  const out: Required = {};
  for (const name of Object.keys(rsp.requirements?.resources ?? {}))
    out[name] = {
      items: (HELD[name] ?? []).map((resource) => ({
        resource,
        connectionDetails: {},
        ready: Ready.READY_UNSPECIFIED,
      })),
    };
  return out;
}

/** One reconcile as Crossplane's loop runs it: the calls it makes. */
function reconcile(xr: Obj, observed: Obj[]): RunFunctionResponse[] {
  const calls: RunFunctionResponse[] = [];
  let required: Required = {};
  let previous: unknown;
  for (let i = 0; i <= 5; i++) {
    const rsp = call(xr, observed, required);
    calls.push(rsp);
    if (fatalOf(rsp)) return calls;
    if (calls.length > 1 && isDeepStrictEqual(rsp.requirements, previous)) return calls;
    previous = rsp.requirements;
    required = fetched(rsp);
  }
  return calls;
}

/** A Database of `spec` as it is once settled: its resources observed ready, reconciled until nothing changes. */
function settled(spec: Obj): { xr: Obj; observed: Obj[] } {
  const xr = databaseXr(spec);
  let observed: Obj[] = [];
  for (let i = 0; i < 4; i++) {
    const last = reconcile(xr, observed).at(-1)!;
    observed = asObserved(last, (_k, o) => healthyStatus(o));
  }
  return { xr, observed };
}

describe('a settled Database costs Crossplane two calls a reconcile, whatever its placement', () => {
  for (const [placement, spec] of [
    ['a StatefulSet, PostgreSQL', { engine: 'postgres', storageGB: 20 }],
    ['a StatefulSet, MySQL', { engine: 'mysql', storageGB: 20 }],
    ['CloudNativePG', { engine: 'postgres', storageGB: 20, highAvailability: true }],
    ['RDS', { engine: 'postgres', storageGB: 20, placement: 'aws', aws: { region: 'eu-west-1' } }],
  ] as const)
    test(placement, () => {
      const { xr, observed } = settled(spec);
      const calls = reconcile(xr, observed);
      assert.equal(fatalOf(calls.at(-1)!), undefined);
      assert.ok(Object.keys(calls[0]!.requirements?.resources ?? {}).length > 0, 'it asks for something');
      assert.equal(
        calls.length,
        2,
        `requirements by call: ${calls
          .map((c) =>
            Object.keys(c.requirements?.resources ?? {})
              .sort()
              .join(','),
          )
          .join(' | ')}`,
      );
    });
});

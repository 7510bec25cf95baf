// Requests for a Database on AWS whose step carries AWS credentials pointing at
// a stand-in endpoint (test/support/fake-aws.ts or moto), for tests of the
// server around the AWS path.
import type { RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';

/**
 * The last call of a reconcile for Database `name` in team-a: every resource
 * the function requires is answered (empty), so its events (an AWS warning
 * among them) are what the server says (src/events.ts).
 */
export function awsDatabaseRequest(name: string, endpoint: string): RunFunctionRequest {
  const xr = {
    apiVersion: 'example.com/v1',
    kind: 'Database',
    metadata: { name, namespace: 'team-a', uid: `uid-${name}` },
    spec: { placement: 'aws', aws: { region: 'eu-west-1' } },
  };
  const credentials = [
    {
      metadata: { name: 'aws' },
      stringData: {
        aws_access_key_id: 'AKIAFAKEFAKEFAKE0001',
        aws_secret_access_key: 'fake/secret/key/for/a/stand-in/endpoint',
        endpoint,
      },
    },
  ];
  let req = buildRequest(xr, [], credentials as Obj[]);
  for (let n = 0; n < 5; n++) {
    const asked = Object.keys(runFunction(req).requirements?.resources ?? {});
    const answered = { ...(req.requiredResources ?? {}) };
    if (asked.every((key) => key in answered)) break;
    for (const key of asked) answered[key] ??= { items: [] };
    req = { ...req, requiredResources: answered };
  }
  return req;
}

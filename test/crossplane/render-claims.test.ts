// Claims mode through the real Crossplane CLI: every example, turned into the
// cluster-scoped composite Crossplane makes from a claim, renders with the
// claims Compositions, and what it composes validates against the
// provider-kubernetes and cluster-scoped provider-upjet-aws CRDs.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MANIFEST } from '../../src/blueprints/manifest.js';
import type { Obj } from '../../src/kube.js';
import { composedOf, crankSkipReason, type Doc, exampleXRs, readYamlDocs, render, xrOf } from '../support/crank.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import { validateObject } from '../support/schemas.js';

/** Each blueprint's claims Composition, by the kind of its examples. */
const COMPOSITIONS: Record<string, string> = Object.fromEntries(
  MANIFEST.map((b) => [b.kinds[0], `package/configuration-claims/apis/${b.name}/composition.yaml`]),
);

/** The composite Crossplane creates for a claim of this example. */
function asClaimComposite(example: Doc): Doc {
  const meta = example['metadata'] as Obj;
  const namespace = String(meta['namespace'] ?? 'default');
  const name = String(meta['name']);
  return {
    apiVersion: example['apiVersion'],
    kind: `X${String(example['kind'])}`,
    metadata: {
      name: `${name}-x7k2p`,
      uid: `0b6c1a2e-claim-${namespace}-${name}`,
      labels: { 'crossplane.io/claim-name': name, 'crossplane.io/claim-namespace': namespace },
    },
    spec: {
      ...(example['spec'] as Obj),
      claimRef: { apiVersion: example['apiVersion'], kind: example['kind'], name, namespace },
    },
  };
}

const skip = crankSkipReason('claims-mode renders');

describe('claims mode with crossplane render', { skip }, () => {
  let fn: FunctionProcess;
  before(async () => {
    fn = await startFunction({ insecure: true });
  });
  after(async () => {
    await fn?.stop();
  });

  const examples = MANIFEST.flatMap((b) => exampleXRs(b.examples, b.kinds[0]!));
  it('finds examples of both kinds', () => assert.ok(examples.length >= 6, examples.join(', ')));

  for (const file of examples) {
    it(`${file} renders as a claim and composes only cluster-scoped kinds that validate`, async () => {
      const example = readYamlDocs(file)[0]!;
      // highAvailability asks whether CloudNativePG is installed; say it is, to render the Cluster too.
      // A DatabaseBackup looks its Database up; render answers with the example's.
      const required = file.includes('cluster-ha')
        ? 'examples/database/required/cnpg-installed.yaml'
        : file.includes('examples/databasebackup/')
          ? 'examples/databasebackup/required/orders.yaml'
          : undefined;
      const extraArgs = required ? ['-e', join(process.cwd(), required)] : [];
      const r = await render({
        xr: asClaimComposite(example),
        composition: COMPOSITIONS[String(example['kind'])]!,
        functionsTarget: fn.target,
        extraArgs,
      });
      assert.equal(r.code, 0, `${r.command}\n${r.stderr}\n${fn.logs()}`);
      const xr = xrOf(r);
      assert.equal(xr['kind'], `X${String(example['kind'])}`);
      assert.equal(xr['status']?.['ready'], false);
      const composed = [...composedOf(r).values()];
      // A DatabaseRestore composes nothing of its own: the Database it names builds the restored instance.
      if (example['kind'] === 'DatabaseRestore') {
        assert.equal(composed.length, 0);
        assert.equal(xr['status']?.['phase'], 'Pending');
        return;
      }
      assert.ok(composed.length > 0);
      const claimNamespace = String((example['metadata'] as Obj)['namespace'] ?? 'default');
      for (const obj of composed) {
        assert.equal(
          obj['metadata']?.['namespace'],
          undefined,
          `${obj['kind']} ${obj['metadata']?.['name']} must be cluster-scoped`,
        );
        assert.doesNotMatch(String(obj['apiVersion']), /\.m\./, 'no namespaced API groups');
        if (obj['kind'] === 'Object') {
          assert.equal(obj['apiVersion'], 'kubernetes.crossplane.io/v1alpha2');
          assert.equal(obj['spec']['forProvider']['manifest']['metadata']['namespace'], claimNamespace);
        }
        const problems = validateObject(obj as Obj).concat(
          obj['kind'] === 'Object' ? validateObject(obj['spec']['forProvider']['manifest'] as Obj) : [],
        );
        assert.deepEqual(problems, [], `${obj['kind']} ${obj['metadata']?.['name']}`);
        const secretRef = obj['spec']?.['writeConnectionSecretToRef'];
        if (secretRef)
          assert.equal(secretRef['namespace'], claimNamespace, 'connection Secrets go to the claim namespace');
      }
    });
  }
});

// A Widget's host over HTTPS: a cert-manager Certificate from the Widget's
// ClusterIssuer or the platform's (the step's Input), served by the Ingress;
// the url says https only once the Certificate is Ready, and until then the
// Widget is not Ready and says it waits for the certificate.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Severity } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
import { Loop } from '../support/loop.js';

const widget = (spec: Obj): Obj => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'shop', namespace: 'team-a' },
  spec: { size: 1, host: 'shop.example.org', ...spec },
});
const platform = (widgetDefaults: Obj): Obj => ({
  apiVersion: 'platform.fn.example.com/v1beta1',
  kind: 'Input',
  defaults: { widget: widgetDefaults },
});

/** Brings the Widget to the point where only the certificate may be missing. */
function servingLoop(spec: Obj, input?: Obj): Loop {
  const loop = new Loop(widget(spec), input);
  loop.apply(loop.call());
  loop.rollOut('deployment-blue');
  loop.settle();
  loop.apply(loop.call());
  loop.settle();
  loop.apply(loop.call());
  return loop;
}

function certificateSays(loop: Loop, conditions: Obj[], extra: Obj = {}): void {
  const cert = loop.observed.get('certificate');
  assert.ok(cert, 'the Certificate was applied');
  cert['status'] = { conditions, ...extra };
}

const READY = {
  type: 'Ready',
  status: 'True',
  reason: 'Ready',
  message: 'Certificate is up to date and has not expired',
};
const ISSUING = {
  type: 'Ready',
  status: 'False',
  reason: 'DoesNotExist',
  message: 'Issuing certificate as Secret does not exist',
};

describe('Widget over HTTPS', () => {
  test("the platform's ClusterIssuer: a Certificate for the host, and the Ingress serves its Secret", () => {
    const loop = new Loop(widget({}), platform({ tls: { clusterIssuer: 'letsencrypt-prod' } }));
    loop.apply(loop.call());
    assert.deepEqual(loop.desiredKeys(), ['certificate', 'deployment-blue', 'ingress', 'service']);
    const cert = loop.desired('certificate')!;
    assert.equal(cert['apiVersion'], 'cert-manager.io/v1');
    assert.equal(cert['kind'], 'Certificate');
    assert.deepEqual(cert['metadata'], {
      name: 'shop',
      namespace: 'team-a',
      labels: {
        'app.kubernetes.io/name': 'widget',
        'app.kubernetes.io/instance': 'shop',
        'app.kubernetes.io/managed-by': 'function-platform',
      },
    });
    const spec = cert['spec'] as Obj;
    assert.equal(spec['secretName'], 'shop-tls');
    assert.deepEqual(spec['dnsNames'], ['shop.example.org']);
    assert.deepEqual(spec['issuerRef'], { group: 'cert-manager.io', kind: 'ClusterIssuer', name: 'letsencrypt-prod' });
    const ingress = loop.desired('ingress')!['spec'] as Obj;
    assert.deepEqual(ingress['tls'], [{ hosts: ['shop.example.org'], secretName: 'shop-tls' }]);
  });

  test("the Widget's own spec.tls wins over the platform's", () => {
    const loop = new Loop(
      widget({ tls: { clusterIssuer: 'team-issuer' } }),
      platform({ tls: { clusterIssuer: 'letsencrypt-prod' } }),
    );
    loop.call();
    assert.equal(((loop.desired('certificate')!['spec'] as Obj)['issuerRef'] as Obj)['name'], 'team-issuer');
  });

  test('no issuer anywhere: plain HTTP, no Certificate; an issuer without a host: nothing to certify', () => {
    const plain = new Loop(widget({}));
    plain.call();
    assert.deepEqual(plain.desiredKeys(), ['deployment-blue', 'ingress', 'service']);
    const noHost = new Loop(
      { ...widget({}), spec: { size: 1 } },
      platform({ tls: { clusterIssuer: 'letsencrypt-prod' } }),
    );
    noHost.call();
    assert.deepEqual(noHost.desiredKeys(), ['deployment-blue', 'service']);
  });

  test('http:// and not Ready while the certificate is issued; https:// and Ready once it is', () => {
    const loop = servingLoop({ tls: { clusterIssuer: 'letsencrypt-prod' } });
    // cert-manager has not spoken yet.
    let status = loop.status();
    assert.equal(status['url'], 'http://shop.example.org');
    assert.equal(status['ready'], false);
    assert.match(
      String(status['message']),
      /^waiting for the certificate of shop\.example\.org \(ClusterIssuer letsencrypt-prod, Secret shop-tls\)/,
    );
    assert.equal(loop.last!.conditions[0]!.reason, 'WaitingForCertificate');
    certificateSays(loop, [ISSUING, { type: 'Issuing', status: 'True', reason: 'DoesNotExist' }]);
    loop.apply(loop.call());
    status = loop.status();
    assert.equal(status['url'], 'http://shop.example.org');
    assert.match(
      String(status['message']),
      /Issuing certificate as Secret does not exist\); serving http:\/\/shop\.example\.org until it is issued$/,
    );
    certificateSays(loop, [READY]);
    loop.apply(loop.call());
    status = loop.status();
    assert.equal(status['ready'], true, String(status['message']));
    assert.equal(status['url'], 'https://shop.example.org');
    assert.equal(status['message'], 'available: 1 replica of blue serving at https://shop.example.org');
  });

  test("a failed issuance is a warning naming cert-manager's reason, and the Widget stays http://", () => {
    const loop = servingLoop({ tls: { clusterIssuer: 'letsencrypt-prod' } });
    certificateSays(
      loop,
      [
        ISSUING,
        {
          type: 'Issuing',
          status: 'False',
          reason: 'Failed',
          message: 'The certificate request has failed to complete and will be retried: ACME challenge failed',
        },
      ],
      { failedIssuanceAttempts: 2 },
    );
    const rsp = loop.call();
    const warning = rsp.results.find(
      (r) => r.severity === Severity.SEVERITY_WARNING && r.reason === 'CertificateNotIssued',
    );
    assert.ok(warning, JSON.stringify(rsp.results));
    assert.match(
      warning.message,
      /issuance failed 2 times \(The certificate request has failed.*ACME challenge failed\)/,
    );
    assert.equal(loop.status()['url'], 'http://shop.example.org');
    assert.equal(loop.status()['ready'], false);
  });

  test('an Input tls without clusterIssuer, or with an unknown field, is Fatal naming it', () => {
    for (const [tls, field] of [
      [{}, 'clusterIssuer'],
      [{ clusterIssuer: 'x', issuer: 'y' }, 'issuer'],
    ] as const) {
      const loop = new Loop(widget({}), platform({ tls }));
      const rsp = loop.call();
      const fatal = rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
      assert.ok(fatal, `Fatal for ${JSON.stringify(tls)}`);
      assert.match(fatal.message, /defaults\.widget\.tls/);
      assert.match(fatal.message, new RegExp(field));
      assert.deepEqual(loop.desiredKeys(), [], 'nothing composed');
    }
  });
});

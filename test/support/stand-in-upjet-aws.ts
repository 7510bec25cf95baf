// STAND-IN for provider-upjet-aws: no AWS and no provider run here, so this
// writes what the provider writes once AWS reports a resource available.
// Conditions Ready and Synced, the instance's (and a snapshot's) atProvider
// figures, and the instance's connection Secret with the keys the provider
// writes (endpoint, address, host, username, port, password).
import type { Json, KubeClient } from './apiserver.js';
import { applyManifest } from './control-plane.js';

/** The password the stand-in's connection Secrets carry. */
export const STAND_IN_PASSWORD = 'stand-in-provider-password-0123';

/** The RDS address the stand-in reports for an instance in `namespace`. */
export const standInAddress = (namespace: string) => `${namespace}-orders-db.c9akciq32.eu-west-1.rds.amazonaws.com`;

/** Marks each namespaced AWS managed resource in `objs` available, as the provider would; others are left alone. */
export async function standInProviderUpjetAws(client: KubeClient, objs: Json[]): Promise<void> {
  const now = new Date().toISOString();
  for (const obj of objs) {
    if (!String(obj['apiVersion']).includes('.aws.m.upbound.io')) continue;
    const ns = String(obj['metadata']['namespace']);
    const address = standInAddress(ns);
    const conditions = [
      { type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: now },
      { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', lastTransitionTime: now },
    ];
    let atProvider: Json = { id: obj['metadata']['name'] };
    // A snapshot of a 20 GiB instance, available.
    if (obj['kind'] === 'Snapshot') atProvider = { ...atProvider, status: 'available', allocatedStorage: 20 };
    if (obj['kind'] === 'Instance') {
      const fp = obj['spec']['forProvider'];
      atProvider = {
        id: 'db-STANDIN0000',
        status: 'available',
        address,
        port: 5432,
        endpoint: `${address}:5432`,
        engineVersionActual: `${fp['engineVersion']}.6`,
        allocatedStorage: fp['allocatedStorage'],
        latestRestorableTime: now,
      };
      // A read replica writes no connection Secret of its own here.
      const secret = obj['spec']['writeConnectionSecretToRef']?.['name'];
      if (secret)
        await applyManifest(client, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: secret, namespace: ns },
          type: 'connection.crossplane.io/v1alpha1',
          stringData: {
            endpoint: address,
            address,
            host: address,
            username: String(fp['username'] ?? 'app'),
            port: '5432',
            password: STAND_IN_PASSWORD,
          },
        });
    }
    await client.mergeStatus(obj, { conditions, atProvider });
  }
}

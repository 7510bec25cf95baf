// What the RDS placement (rds.ts) and its restore drill (rds-drill.ts) both
// name: the composition-resource keys, a Database's RDS identifier, and the
// provider configuration its managed resources use.
import { dnsLabel } from '../../../names.js';
import type { Owner } from '../../blueprint.js';
import { baseName, type ResolvedSpec } from '../database.js';

export const AWS_KEYS = {
  instance: 'rds-instance',
  subnetGroup: 'rds-subnet-group',
  bucket: 'backup-bucket',
  versioning: 'backup-bucket-versioning',
  encryption: 'backup-bucket-encryption',
  publicAccessBlock: 'backup-bucket-public-access-block',
  lifecycle: 'backup-bucket-lifecycle',
  /** A DatabaseBackup's RDS Snapshot. */
  snapshot: 'rds-snapshot',
} as const;

/**
 * A Database's first RDS identifier, from its owner alone (a DatabaseBackup
 * names it): RDS identifiers are unique per account and region, so the
 * namespace is part of it (rds.ts says more).
 */
export function rdsIdentifierOf(owner: Owner): string {
  const raw = `${owner.namespace}-${baseName(owner)}`.replace(/-+/g, '-');
  return dnsLabel(raw).replace(/-+/g, '-');
}

export function providerConfigRef(spec: ResolvedSpec): { kind: string; name: string } {
  return { kind: 'ClusterProviderConfig', name: spec.aws?.providerConfigName ?? 'default' };
}

// moto's server, standing in for AWS in the database-aws-live case, with the
// instance and bucket of examples/database/aws.yaml as the provider would
// have made them. Optional: without moto (scripts/install-moto.sh) the case
// is left out.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CreateDBInstanceCommand, RDSClient } from '@aws-sdk/client-rds';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { repoRoot } from '../dev/infra/paths.js';
import { freePort, type Proc, spawnLogged, waitFor } from '../dev/infra/processes.js';

export interface Moto {
  endpoint: string;
  proc: Proc;
  stop(): Promise<void>;
}

/** $MOTO_SERVER, else where scripts/install-moto.sh puts it; undefined when it is not there. */
export function motoBinary(): string | undefined {
  const bin = process.env['MOTO_SERVER'] ?? join(repoRoot, '.cache', 'moto-venv', 'bin', 'moto_server');
  return existsSync(bin) ? bin : undefined;
}

/** Starts moto (log in `logDir`), waits until it answers HTTP, and makes what the case reads. */
export async function startAws(bin: string, logDir: string): Promise<Moto> {
  const port = await freePort();
  const proc = spawnLogged('moto', bin, ['-H', '127.0.0.1', '-p', String(port)], join(logDir, `moto-${port}.log`));
  const endpoint = `http://127.0.0.1:${port}`;
  const moto: Moto = { endpoint, proc, stop: () => proc.stop(5_000) };
  try {
    await waitFor('moto_server', proc, 30_000, async () => (await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) })).status < 500, 200);
    const credentials = { accessKeyId: 'AKIABENCHMARK0000000', secretAccessKey: 'benchmark-secret-key-not-real' };
    const rds = new RDSClient({ region: 'eu-west-1', endpoint, credentials });
    const s3 = new S3Client({ region: 'eu-west-1', endpoint, credentials, forcePathStyle: true });
    await rds.send(
      new CreateDBInstanceCommand({ DBInstanceIdentifier: 'team-a-orders-db', Engine: 'postgres', EngineVersion: '17.2', DBInstanceClass: 'db.t4g.small', AllocatedStorage: 20, MasterUsername: 'app', MasterUserPassword: 'benchmark-only-0' }),
    );
    await s3.send(new CreateBucketCommand({ Bucket: 'orders-db-backups-75c1a60b89', CreateBucketConfiguration: { LocationConstraint: 'eu-west-1' } }));
    await s3.send(new PutObjectCommand({ Bucket: 'orders-db-backups-75c1a60b89', Key: 'orders.dump', Body: 'x' }));
    rds.destroy();
    s3.destroy();
    return moto;
  } catch (err) {
    await moto.stop();
    throw err;
  }
}

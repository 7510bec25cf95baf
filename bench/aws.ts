// moto's server, standing in for AWS in the database-aws-live case, with the
// instance of examples/database/aws.yaml as the provider would
// have made them. Optional: without moto (scripts/install-moto.sh) the case
// is left out.
import { CreateDBInstanceCommand, RDSClient } from '@aws-sdk/client-rds';
import { type Moto, motoServerPath, startMotoServer } from '../dev/infra/moto.js';

export type { Moto };

/** moto_server, or undefined when it is not installed. */
export const motoBinary = motoServerPath;

/** Starts moto (log in `logDir`), waits until it answers HTTP, and makes what the case reads. */
export async function startAws(bin: string, logDir: string): Promise<Moto> {
  const moto = await startMotoServer(bin, { logDir });
  const endpoint = moto.endpoint;
  try {
    const credentials = { accessKeyId: 'AKIABENCHMARK0000000', secretAccessKey: 'benchmark-secret-key-not-real' };
    const rds = new RDSClient({ region: 'eu-west-1', endpoint, credentials });
    await rds.send(
      new CreateDBInstanceCommand({
        DBInstanceIdentifier: 'team-a-orders-db',
        Engine: 'postgres',
        EngineVersion: '17.2',
        DBInstanceClass: 'db.t4g.small',
        AllocatedStorage: 20,
        MasterUsername: 'app',
        MasterUserPassword: 'benchmark-only-0',
      }),
    );
    rds.destroy();
    return moto;
  } catch (err) {
    await moto.stop();
    throw err;
  }
}

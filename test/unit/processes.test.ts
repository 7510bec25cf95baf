// The test-infrastructure core's port picking: a start that loses its port to
// another process between the pick and its bind is tried again on new ports.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import { onFreePorts } from '../../dev/infra/processes.js';

describe('onFreePorts', () => {
  test('a port taken before the bind: tried again on new ports; other failures are not retried', async () => {
    const seen: number[][] = [];
    const port = await onFreePorts(1, async ([p]) => {
      seen.push([p!]);
      if (seen.length === 1) {
        // Someone else binds the port first, as a parallel test file can.
        const squatter = createServer().listen(p, '127.0.0.1');
        await new Promise((r) => squatter.once('listening', r));
        const mine = createServer();
        const err = await new Promise<Error>((resolve) => mine.once('error', resolve).listen(p, '127.0.0.1'));
        squatter.close();
        throw new Error(`etcd exited (1): ${err.message}`);
      }
      return p!;
    });
    assert.equal(seen.length, 2);
    assert.equal(port, seen[1]![0]);
    let calls = 0;
    await assert.rejects(
      onFreePorts(1, async () => {
        calls++;
        throw new Error('bad flag');
      }),
      /bad flag/,
    );
    assert.equal(calls, 1);
  });
});

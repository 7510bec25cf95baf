// The memory the transport reuses for calls' bytes (src/byte-pool.ts): blocks
// by power-of-two size, what is given back taken again, and both bounds held.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BytePool } from '../../src/byte-pool.js';

describe('BytePool', () => {
  test('a block holds what was asked: 1, 2 or 4 KiB, then steps of 4 KiB', () => {
    const pool = new BytePool({ largest: 64 * 1024, kept: 1024 * 1024 });
    assert.equal(pool.take(1).byteLength, 1024);
    assert.equal(pool.take(1024).byteLength, 1024);
    assert.equal(pool.take(1025).byteLength, 2048);
    assert.equal(pool.take(3000).byteLength, 4096);
    assert.equal(pool.take(4730).byteLength, 8192);
    assert.equal(pool.take(40_000).byteLength, 40_960, 'not 64 KiB: a kept request wastes at most 4 KiB');
    assert.equal(pool.take(64 * 1024).byteLength, 64 * 1024);
  });

  test('a block given back is the one taken next for its size, and only for its size', () => {
    const pool = new BytePool({ largest: 64 * 1024, kept: 1024 * 1024 });
    const a = pool.take(5000);
    pool.give(a);
    assert.equal(pool.idleBytes, 8192);
    assert.notEqual(pool.take(3000), a, 'another size');
    assert.equal(pool.take(6000), a);
    assert.equal(pool.idleBytes, 0);
    assert.notEqual(pool.take(6000), a, 'taken already');
  });

  test('larger than `largest`: the exact size, never kept', () => {
    const pool = new BytePool({ largest: 64 * 1024, kept: 1024 * 1024 });
    const big = pool.take(100_000);
    assert.equal(big.byteLength, 100_000);
    pool.give(big);
    assert.equal(pool.idleBytes, 0);
    pool.give(new ArrayBuffer(3000));
    assert.equal(pool.idleBytes, 0, 'a size the pool does not hand out');
  });

  test('no more than `kept` bytes wait; the rest is left to the GC', () => {
    const pool = new BytePool({ largest: 64 * 1024, kept: 20 * 1024 });
    const blocks = [pool.take(8192), pool.take(8192), pool.take(8192)];
    for (const b of blocks) pool.give(b);
    assert.equal(pool.idleBytes, 16 * 1024);
    assert.equal(pool.take(8192), blocks[1]);
    assert.equal(pool.take(8192), blocks[0]);
    assert.notEqual(pool.take(8192), blocks[2]);
  });
});

// The codec's tables (src/wire.ts) against the SDK's generated messages and
// run_function.proto. A field the SDK or the .proto has and a table lacks
// would be skipped on the wire without a word: it fails here, and so does a
// number, a wire type or a type that differs.
//
// The SDK's fields are found by asking its own decoders: one field at a time,
// every number up to PROBE_MAX in every wire type; the property that changes
// is the field's.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { repoRoot } from '../../dev/infra/paths.js';
import { emptyMessage, requestTable, responseTable, structFields, type Message } from '../../src/wire.js';

interface SdkMessage {
  decode(bytes: Uint8Array): Record<string, unknown>;
  fromPartial(o: object): Record<string, unknown>;
}

// The SDK's generated modules, the nested messages its index does not export included.
const sdkIndex = import.meta.resolve('@crossplane-org/function-sdk-typescript');
const load = async (path: string) => (await import(new URL(path, sdkIndex).href)) as Record<string, SdkMessage>;
const sdk: Record<string, SdkMessage> = { ...(await load('./proto/run_function.js')) };
for (const [name, m] of Object.entries({
  ...(await load('./proto/google/protobuf/duration.js')),
  ...(await load('./proto/google/protobuf/struct.js')),
})) {
  sdk[`google.protobuf.${name}`] = m;
}
const sdkMessage = (name: string): SdkMessage => {
  const m = sdk[name];
  assert.ok(m && typeof m.decode === 'function', `the SDK has no message ${name}`);
  return m;
};

const PROBE_MAX = 128;
const varint = (v: number): number[] => {
  const out: number[] = [];
  for (; v >= 0x80; v >>>= 7) out.push((v & 0x7f) | 0x80);
  return [...out, v];
};
// Field bodies, by wire type, that give any field of that type a value other
// than its default. Length-delimited: the bytes of an empty field 2 (a string,
// bytes, a message, a map entry with an empty value), and of a field 2 holding
// Value {bool_value: true} (a Struct's map entry drops an empty Value).
const bodies: Array<[wire: number, body: number[]]> = [
  [0, [1]],
  [1, [1, 0, 0, 0, 0, 0, 0, 0]],
  [2, [2, 0x12, 0]],
  [2, [4, 0x12, 2, 0x20, 1]],
  [5, [1, 0, 0, 0]],
];

interface SdkField {
  name: string;
  wires: Set<number>;
}

/** The fields the SDK's decoder of `m` takes: number → property, and the wire types it reads the field in. */
function sdkFields(name: string): Map<number, SdkField> {
  const m = sdkMessage(name);
  const empty = m.decode(new Uint8Array());
  const found = new Map<number, SdkField>();
  for (let no = 1; no <= PROBE_MAX; no++) {
    for (const [wire, body] of bodies) {
      const got = m.decode(Uint8Array.from([...varint((no << 3) | wire), ...body]));
      const changed = Object.keys(got).filter((k) => !isDeepStrictEqual(got[k], empty[k]));
      assert.ok(changed.length <= 1, `${name}: field ${no} sets ${changed.join(', ')}`);
      if (changed.length === 0) continue;
      const f = found.get(no) ?? { name: changed[0]!, wires: new Set<number>() };
      assert.equal(f.name, changed[0], `${name}: field ${no} sets ${f.name} and ${changed[0]}`);
      f.wires.add(wire);
      found.set(no, f);
    }
  }
  // Every property of the SDK's message is a field found (none numbered past PROBE_MAX).
  const props = [...found.values()].map((f) => f.name).sort();
  assert.deepEqual(props, Object.keys(m.fromPartial({})).sort(), `${name}: properties the probe did not find`);
  return found;
}

/** Every table reachable from `root` through message, repeated and map fields. */
function reachable(root: Message): Map<string, Message> {
  const seen = new Map<string, Message>();
  const visit = (m: Message) => {
    if (seen.has(m.name)) return;
    seen.set(m.name, m);
    for (const f of m.fields) if (f.kind.of) visit(f.kind.of);
  };
  visit(root);
  return seen;
}
const read = reachable(requestTable);
const written = reachable(responseTable);
const tables = new Map([...read, ...written]);

/** run_function.proto's messages: each field's number → name (ts-proto's camelCase) and type as declared. */
function protoMessages(): Map<string, Map<number, { name: string; type: string }>> {
  const dir = process.env['SHARED_CRDS_DIR'] ?? join(repoRoot, '..', 'shared', 'crds');
  const text = readFileSync(join(dir, 'crossplane', 'run_function.proto'), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '');
  const out = new Map<string, Map<number, { name: string; type: string }>>();
  for (const [, name, body] of text.matchAll(/^message\s+(\w+)\s*\{([\s\S]*?)^\}/gm)) {
    const fields = new Map<number, { name: string; type: string }>();
    let inOneof = false;
    for (const line of body!.split('\n').map((l) => l.trim())) {
      if (/^oneof\s+\w+\s*\{$/.test(line)) inOneof = true;
      else if (line === '}') inOneof = false;
      const f = /^((?:optional |repeated )?(?:map<\s*\w+\s*,\s*[\w.]+\s*>|[\w.]+))\s+(\w+)\s*=\s*(\d+)/.exec(line);
      if (!f) continue;
      // A oneof member has presence, as an optional field has.
      const type =
        (inOneof ? 'optional ' : '') + f[1]!.replace(/\s+/g, ' ').replace('map< ', 'map<').replace(' >', '>');
      fields.set(Number(f[3]), { name: f[2]!.replace(/_(\w)/g, (_, c: string) => c.toUpperCase()), type });
    }
    out.set(name!, fields);
  }
  return out;
}

const sorted = <T>(m: Map<number, T>) => [...m].sort((a, b) => a[0] - b[0]);

describe('wire codec tables', () => {
  test('every message nested in RunFunctionRequest and RunFunctionResponse in run_function.proto has a table', () => {
    const proto = protoMessages();
    const nested = (root: string) => {
      const seen = new Set<string>();
      const visit = (name: string) => {
        if (seen.has(name)) return;
        seen.add(name);
        for (const f of proto.get(name)?.values() ?? []) {
          const type = /^(?:optional |repeated )?(?:map<\w+, ([\w.]+)>|([\w.]+))$/.exec(f.type);
          const of = type?.[1] ?? type?.[2] ?? '';
          if (proto.has(of) || of.startsWith('google.protobuf.')) visit(of);
        }
      };
      visit(root);
      // Struct is the hand-written code's.
      seen.delete('google.protobuf.Struct');
      return [...seen].sort();
    };
    assert.deepEqual([...read.keys()].sort(), nested('RunFunctionRequest'), 'read');
    assert.deepEqual([...written.keys()].sort(), nested('RunFunctionResponse'), 'written');
  });

  for (const [name, table] of tables) {
    test(`${name}: the table has the SDK's fields, numbers and wire types`, () => {
      const ours = new Map(table.fields.map((f) => [f.no, f]));
      const theirs = sdkFields(name);
      assert.deepEqual(
        sorted(ours).map(([no, f]) => [no, f.name]),
        sorted(theirs).map(([no, f]) => [no, f.name]),
        `${name}: [field number, property] in src/wire.ts (actual) and in the SDK (expected)`,
      );
      for (const [no, f] of ours) {
        const wires = [...theirs.get(no)!.wires].sort();
        assert.ok(
          wires.includes(f.kind.wire),
          `${name}.${f.name}: written in wire type ${f.kind.wire}, the SDK reads ${wires.join(', ')}`,
        );
        if (read.has(name))
          assert.deepEqual(
            Object.keys(f.kind.read).map(Number).sort(),
            wires,
            `${name}.${f.name}: the wire types read, ours and the SDK's`,
          );
        if (written.has(name)) assert.ok(f.kind.write, `${name}.${f.name} is never written`);
      }
    });
  }

  test("each message read starts from the SDK decoder's empty message", () => {
    for (const [name, table] of read) {
      const empty = sdkMessage(name).decode(new Uint8Array());
      assert.deepEqual(Object.keys(emptyMessage(table)), Object.keys(empty), `${name}: the properties in order`);
      assert.deepEqual(emptyMessage(table), empty, name);
    }
  });

  test('each table declares its fields as run_function.proto does', () => {
    const proto = protoMessages();
    assert.ok(proto.has('RunFunctionRequest') && proto.has('RunFunctionResponse'), 'run_function.proto was not parsed');
    for (const [name, table] of tables) {
      if (name.startsWith('google.protobuf.')) continue;
      const declared = proto.get(name);
      assert.ok(declared, `run_function.proto has no message ${name}`);
      assert.deepEqual(
        table.fields.map((f) => [f.no, f.name, f.kind.proto]).sort((a, b) => Number(a[0]) - Number(b[0])),
        sorted(declared).map(([no, f]) => [no, f.name, f.type]),
        `${name}: [number, property, type] in src/wire.ts (actual) and run_function.proto (expected)`,
      );
    }
  });

  test('the hand-written Struct, Value and ListValue code handles the SDK fields', () => {
    for (const [name, fields] of Object.entries(structFields)) {
      const theirs = sdkFields(name);
      assert.deepEqual(
        Object.entries(fields)
          .map(([prop, [no, wire]]) => [no, prop, [wire]])
          .sort((a, b) => Number(a[0]) - Number(b[0])),
        sorted(theirs).map(([no, f]) => [no, f.name, [...f.wires]]),
        name,
      );
    }
  });
});

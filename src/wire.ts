// The RunFunction wire codec the server uses (measured in bench/README.md):
// the same bytes as the SDK's generated codec, without its costs.
//
// The SDK (ts-proto over @bufbuild/protobuf) turns every JSON value of a
// google.protobuf.Struct into a wrapper object (Struct.wrap / Value.wrap),
// and writes every nested message into its own forked buffer that is then
// copied into its parent (fork/join), once per level of nesting: a Kubernetes
// object nested ten levels deep is copied ten times. Decoding builds the
// wrappers back (Value, Struct_FieldsEntry) before unwrapping them.
//
// Here Struct and Value, where nearly all the bytes are, are read and written
// by hand: encoding goes forwards into one scratch buffer, decoding straight
// into plain objects (large subtrees only when first read: see Undecoded). The messages around them are read and written by
// functions compiled at load from a table per message. The output is
// byte-for-byte what the SDK's encoder writes (same field order, same
// omissions), and the decoder returns what the SDK's decoder returns:
// test/unit/wire.test.ts and bench/wire-check.ts check both on every example
// and on random objects.
import type { RunFunctionRequest, RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';

// Node's own UTF-8 copies (Buffer.prototype, undocumented but stable; what
// protobufjs uses): no encoding lookup per call, unlike write() and toString().
type NodeBuffer = Buffer & {
  utf8Write(s: string, offset: number, length: number): number;
  utf8Slice(start: number, end: number): string;
  latin1Slice(start: number, end: number): string;
};

// ---------------------------------------------------------------- encoding
//
// One pass, forwards, into a scratch buffer kept between calls. A nested
// message gets one byte for its length; when its body turns out to need more
// (128 bytes or longer), the body is moved up by the difference (memmove),
// which happens only for the few large messages. The answer is copied out of
// the scratch buffer once at the end.

let buf = Buffer.allocUnsafe(64 * 1024) as NodeBuffer;
let pos = 0;

function ensure(n: number): void {
  if (pos + n <= buf.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, pos + n)) as NodeBuffer;
  buf.copy(bigger, 0, 0, pos);
  buf = bigger;
}

function varintSize(v: number): number {
  if (v < 0) return 10;
  let n = 1;
  while (v >= 0x80) {
    v = v < 2 ** 32 ? v >>> 7 : Math.floor(v / 128);
    n++;
  }
  return n;
}

/** A varint at pos (room already ensured). Negative int32s and enums are sign-extended to 10 bytes. */
function putVarint(v: number): void {
  if (v < 0) {
    let lo = v >>> 0;
    let hi = 0xffffffff;
    for (let i = 0; i < 9; i++) {
      buf[pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi = hi >>> 7;
    }
    buf[pos++] = lo & 0x01;
    return;
  }
  while (v >= 0x80) {
    buf[pos++] = (v & 0x7f) | 0x80;
    v = v < 2 ** 32 ? v >>> 7 : Math.floor(v / 128);
  }
  buf[pos++] = v;
}

function tagVarint(tag: number, v: number): void {
  ensure(11);
  buf[pos++] = tag;
  putVarint(v);
}

/** Starts a nested message field; returns where its length goes. */
function open(tag: number): number {
  ensure(2);
  buf[pos++] = tag;
  return pos++;
}

/** Ends the nested message opened at `at`: writes its length, moving the body up if the length needs more than a byte. */
function close(at: number): void {
  const len = pos - at - 1;
  if (len < 0x80) {
    buf[at] = len;
    return;
  }
  const extra = varintSize(len) - 1;
  ensure(extra);
  buf.copyWithin(at + 1 + extra, at + 1, pos);
  const end = pos + extra;
  pos = at;
  putVarint(len);
  pos = end;
}

function putString(tag: number, s: string): void {
  const n = s.length;
  if (n < 43) {
    // At most 3 bytes per UTF-16 unit: the length fits in one byte.
    ensure(2 + 3 * n);
    buf[pos++] = tag;
    const at = pos++;
    let p = pos;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        p = pos + buf.utf8Write(s, pos, 3 * n);
        break;
      }
      buf[p++] = c;
    }
    buf[at] = p - pos;
    pos = p;
    return;
  }
  const len = Buffer.byteLength(s, 'utf8');
  ensure(6 + len);
  buf[pos++] = tag;
  putVarint(len);
  pos += buf.utf8Write(s, pos, len);
}

// google.protobuf.Value: null_value=1 (varint), number_value=2 (double),
// string_value=3, bool_value=4 (varint), struct_value=5, list_value=6.
function putValue(v: unknown): void {
  if (v === null) {
    ensure(2);
    buf[pos++] = 8;
    buf[pos++] = 0;
    return;
  }
  switch (typeof v) {
    case 'string':
      putString(26, v);
      return;
    case 'number':
      ensure(9);
      buf[pos++] = 17;
      buf.writeDoubleLE(v, pos);
      pos += 8;
      return;
    case 'boolean':
      ensure(2);
      buf[pos++] = 32;
      buf[pos++] = v ? 1 : 0;
      return;
    case 'undefined':
      return;
    case 'object': {
      if (Array.isArray(v)) {
        const list = open(50);
        for (const item of v) {
          const at = open(10);
          putValue(item);
          close(at);
        }
        close(list);
      } else {
        const at = open(42);
        putStruct(v as Record<string, unknown>);
        close(at);
      }
      return;
    }
    default:
      throw new Error(`Unsupported any value type: ${typeof v}`);
  }
}

// google.protobuf.Struct: repeated FieldsEntry fields = 1 {string key = 1; Value value = 2}.
function putStruct(obj: Record<string, unknown>): void {
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    // The SDK's encoder drops an own "__proto__" key (its assignment sets a prototype instead): so do we.
    if (v === undefined || key === '__proto__') continue;
    const entry = open(10);
    if (key !== '') putString(10, key);
    const value = open(18);
    putValue(v);
    close(value);
    close(entry);
  }
}

// ---------------------------------------------------------------- decoding
//
// Straight into plain objects. Every message counts towards the SDK's nesting
// limit exactly as the SDK's decoder counts it (each message decoded, map
// entries and Values included), so what one refuses the other refuses.

const MAX_DEPTH = 100;
/** Struct values of this many bytes or more are decoded when first read (see Undecoded below). */
const LAZY_MIN = 4096;

// Short ASCII strings (keys, kinds, names, label values) repeat from call to
// call: a small table keeps the last string seen per hash, so a repeat costs
// a comparison instead of an allocation.
const INTERN_MAX = 40;
const INTERN_SLOTS = 4096;
const interned: Array<string | undefined> = new Array<string | undefined>(INTERN_SLOTS).fill(undefined);

class Reader {
  pos = 0;
  depth = 0;
  /** Whether a value was skimmed to decode on first read (see Undecoded), pointing into `buf`. */
  deferred = false;
  /** Above 0 while reading the answers of required resources, whose Structs are shared (readSharedStruct). */
  shared = 0;
  constructor(
    readonly buf: NodeBuffer,
    /** Struct values this long or longer decode on first read (see Undecoded). */
    readonly lazyMin = LAZY_MIN,
  ) {}

  fail(what: string): never {
    throw new Error(`invalid RunFunctionRequest: ${what} at byte ${this.pos}`);
  }

  /** Entering a message, as the SDK's decoders count: refuse past 100 levels. */
  enter(): void {
    if (this.depth >= MAX_DEPTH) throw new Error('protobuf decode recursion limit exceeded');
    this.depth++;
  }

  /** A varint's low 32 bits, unsigned (tags, lengths), as the SDK's reader.uint32() reads it. */
  varint(): number {
    const buf = this.buf;
    if (this.pos >= buf.length) this.fail('truncated varint');
    let b = buf[this.pos++]!;
    if (b < 0x80) return b;
    let v = b & 0x7f;
    for (let shift = 7; ; shift += 7) {
      if (shift > 63) this.fail('varint too long');
      if (this.pos >= buf.length) this.fail('truncated varint');
      b = buf[this.pos++]!;
      if (shift < 32) v |= (b & 0x7f) << shift;
      if (b < 0x80) return v >>> 0;
    }
  }

  /** An int32 or enum; a negative one arrives as a 10-byte varint. */
  int32(): number {
    return this.varint() | 0;
  }

  /** The end of a length-delimited field starting here. */
  end(): number {
    const len = this.varint();
    const end = this.pos + len;
    if (end > this.buf.length) this.fail('length past the end');
    return end;
  }

  string(): string {
    const end = this.end();
    const start = this.pos;
    this.pos = end;
    const buf = this.buf;
    const n = end - start;
    if (n > INTERN_MAX) return buf.utf8Slice(start, end);
    let h = n;
    for (let i = start; i < end; i++) {
      const c = buf[i]!;
      if (c >= 0x80) return buf.utf8Slice(start, end);
      h = (Math.imul(h, 31) + c) | 0;
    }
    const slot = (h ^ (h >>> 13)) & (INTERN_SLOTS - 1);
    const hit = interned[slot];
    if (hit !== undefined && hit.length === n) {
      let i = 0;
      while (i < n && hit.charCodeAt(i) === buf[start + i]) i++;
      if (i === n) return hit;
    }
    const str = buf.latin1Slice(start, end);
    interned[slot] = str;
    return str;
  }

  bytes(): Buffer {
    const end = this.end();
    const out = Buffer.from(this.buf.subarray(this.pos, end)); // a copy, as the SDK makes
    this.pos = end;
    return out;
  }

  double(): number {
    if (this.pos + 8 > this.buf.length) this.fail('truncated double');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  skip(wireType: number): void {
    switch (wireType) {
      case 0:
        this.varint();
        return;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.pos = this.end();
        return;
      case 5:
        this.pos += 4;
        break;
      default:
        this.fail(`unsupported wire type ${wireType}`);
    }
    if (this.pos > this.buf.length) this.fail('truncated field');
  }
}

// google.protobuf.Value, unwrapped as Value.unwrap does it: string, number,
// bool, struct, list, null, in that order of precedence.
function readValue(r: Reader, end: number): unknown {
  r.enter();
  let str: string | undefined;
  let num: number | undefined;
  let bool: boolean | undefined;
  let struct: Record<string, unknown> | undefined;
  let list: unknown[] | undefined;
  let isNull = false;
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag) {
      case 26:
        str = r.string();
        continue;
      case 42:
        struct = readStruct(r, r.end());
        continue;
      case 17:
        num = r.double();
        continue;
      case 32:
        bool = r.varint() !== 0;
        continue;
      case 50:
        list = readList(r, r.end());
        continue;
      case 8:
        r.varint();
        isNull = true;
        continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  if (str !== undefined) return str;
  if (num !== undefined) return num;
  if (bool !== undefined) return bool;
  if (struct !== undefined) return struct;
  if (list !== undefined) return list;
  return isNull ? null : undefined;
}

function readList(r: Reader, end: number): unknown[] {
  r.enter();
  const out: unknown[] = [];
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) {
      out.push(readValue(r, r.end()));
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return out;
}

/**
 * Stores a decoded "__proto__" key as an own property: assigned, it would
 * replace the object's prototype and the key would be gone (the SDK's decoder
 * loses it that way). Every other key is assigned where it is read.
 */
function ownKey(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

function readStruct(r: Reader, end: number): Record<string, unknown> {
  r.enter();
  const out: Record<string, unknown> = {};
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) {
      const entryEnd = r.end();
      r.enter();
      let key = '';
      let value: unknown;
      while (r.pos < entryEnd) {
        const t = r.varint();
        if (t === 10) key = r.string();
        else if (t === 18) {
          const e = r.end();
          value = e - r.pos >= r.lazyMin && holdsTree(r.buf, r.pos, e) ? skimmed(r, e) : readValue(r, e);
        } else if ((t & 7) === 4 || t === 0) break;
        else r.skip(t & 7);
      }
      r.depth--;
      if (value instanceof Undecoded) {
        if (key !== '__proto__') decodeOnRead(out, key, value);
        else ownKey(out, key, value.decode());
      } else if (value !== undefined) {
        if (key !== '__proto__') out[key] = value;
        else ownKey(out, key, value);
      }
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return out;
}

// ---------------------------------------------------------------- reference data, decoded once
//
// Crossplane sends the same reference data on every call: a required schema
// until a CRD changes, and the objects that answer required resources (a CRD,
// a claim, a Pod), each of those twice (the function asks under both names, as
// required and as extra resources, and v2.2 answers both). A schema is large:
// a provider's RDS Instance is 110 KB on the wire, most of an RDS Database's
// request, and decoding it was most of that call's CPU under Crossplane.
// These Structs are decoded in full and frozen, whatever their size, so that
// nothing may change them; from 1 KiB up, one is also kept by its bytes, and
// a repeat costs one comparison of bytes and hands out the same object.
// Bounded by count and bytes, the least recently used going first; Secrets
// are not kept beyond their call. Observed and desired objects differ from
// call to call and are decoded as they come.

const SHARED_MIN = 1024;
export const SHARED_MAX_ENTRIES = 64;
/** Of the wire's bytes: decoded, a value takes several times that. */
export const SHARED_MAX_BYTES = 1024 * 1024;

interface Shared {
  readonly bytes: Buffer;
  readonly value: Record<string, unknown>;
  /** The nesting depth it was read at: a repeat deeper in would count differently against MAX_DEPTH. */
  readonly depth: number;
}

/** Most recently used first. */
const sharedStructs: Shared[] = [];
let sharedBytes = 0;

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** A Struct decoded in full and frozen; kept by its bytes, and handed out again for the same bytes. */
function readSharedStruct(r: Reader, end: number): Record<string, unknown> {
  const start = r.pos;
  const n = end - start;
  const kept = n >= SHARED_MIN && n <= SHARED_MAX_BYTES;
  if (kept) {
    for (let i = 0; i < sharedStructs.length; i++) {
      const hit = sharedStructs[i]!;
      if (hit.bytes.length === n && hit.depth === r.depth && r.buf.compare(hit.bytes, 0, n, start, end) === 0) {
        if (i > 0) sharedStructs.unshift(...sharedStructs.splice(i, 1));
        r.pos = end;
        return hit.value;
      }
    }
  }
  // In full, so the value never points into the request's bytes.
  const eager = new Reader(r.buf, Number.POSITIVE_INFINITY);
  eager.pos = start;
  eager.depth = r.depth;
  const value = deepFreeze(readStruct(eager, end));
  r.pos = eager.pos;
  // Kept only when its own bytes made it, all of them: a Struct that ends early (a zero or end-group tag)
  // leaves the rest to the message around it, and one whose entry runs past its end read bytes that are
  // not part of the key.
  if (kept && eager.pos === end && value['kind'] !== 'Secret') {
    const bytes = Buffer.allocUnsafeSlow(n); // not a slice of Node's shared pool, which it would keep alive
    r.buf.copy(bytes, 0, start, end);
    sharedStructs.unshift({ bytes, value, depth: r.depth });
    sharedBytes += n;
    while (sharedStructs.length > SHARED_MAX_ENTRIES || sharedBytes > SHARED_MAX_BYTES)
      sharedBytes -= sharedStructs.pop()!.bytes.length;
  }
  return value;
}

// ---------------------------------------------------------------- decoding on first read
//
// Most of a large request is observed state the blueprint never reads (a
// Deployment's managedFields, a status' long lists). A Struct field whose value
// is a struct or list of LAZY_MIN bytes or more is checked where it stands
// (skimValue: the same reads and the same errors as readValue, nothing built)
// and becomes a property that decodes those bytes the first time it is read,
// then holds the plain value. Reading it, spreading, Object.keys/entries and
// JSON all see what the eager decoder would have built; what is never read is
// never built. The request's buffer stays referenced until then.

/** A Value's bytes, checked, with the nesting depth it starts at. */
class Undecoded {
  constructor(
    readonly buf: NodeBuffer,
    readonly start: number,
    readonly end: number,
    readonly depth: number,
    readonly lazyMin: number,
  ) {}

  decode(): unknown {
    const r = new Reader(this.buf, this.lazyMin);
    r.pos = this.start;
    r.depth = this.depth;
    return readValue(r, this.end);
  }
}

/** Whether the Value at [pos, end) is one struct_value (5) or list_value (6) field and nothing else. */
function holdsTree(buf: NodeBuffer, pos: number, end: number): boolean {
  const tag = buf[pos];
  if (tag !== 42 && tag !== 50) return false;
  let len = 0;
  let p = pos + 1;
  for (let shift = 0; shift < 35 && p < end; shift += 7) {
    const b = buf[p++]!;
    len += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return p + len === end;
  }
  return false;
}

function skimmed(r: Reader, end: number): Undecoded {
  r.deferred = true;
  const at = new Undecoded(r.buf, r.pos, end, r.depth, r.lazyMin);
  skimValue(r, end);
  return at;
}

/** The property `key` of `o`: the Value's bytes decoded on first read (or replaced on first write). */
function decodeOnRead(o: Record<string, unknown>, key: string, bytes: Undecoded): void {
  let decoded: unknown;
  let done = false;
  const settle = (value: unknown) => {
    try {
      Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
    } catch {
      // A frozen holder keeps the accessor, which returns the decoded value from now on.
    }
  };
  Object.defineProperty(o, key, {
    enumerable: true,
    configurable: true,
    get() {
      if (!done) {
        decoded = bytes.decode();
        done = true;
        settle(decoded);
      }
      return decoded;
    },
    set(value: unknown) {
      decoded = value;
      done = true;
      settle(value);
    },
  });
}

// readValue, readList and readStruct without building anything: the same
// reads, in the same order, with the same checks, so a request is refused or
// accepted exactly as the eager decoder refuses or accepts it.
function skimValue(r: Reader, end: number): void {
  r.enter();
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag) {
      case 26:
        r.pos = r.end();
        continue;
      case 42:
        skimStruct(r, r.end());
        continue;
      case 17:
        r.double();
        continue;
      case 32:
      case 8:
        r.varint();
        continue;
      case 50:
        skimList(r, r.end());
        continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
}

/** A message's fields up to `end`: field 1's values skimmed by `skim`, others skipped; an end-group tag or 0 ends it. */
function skimRepeated(r: Reader, end: number, skim: (r: Reader, end: number) => void): void {
  r.enter();
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) {
      skim(r, r.end());
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
}

function skimList(r: Reader, end: number): void {
  skimRepeated(r, end, skimValue);
}

function skimStruct(r: Reader, end: number): void {
  skimRepeated(r, end, skimEntry);
}

/** One entry of a Struct's map: its key, then its value. */
function skimEntry(r: Reader, end: number): void {
  r.enter();
  while (r.pos < end) {
    const t = r.varint();
    if (t === 10) r.pos = r.end();
    else if (t === 18) skimValue(r, r.end());
    else if ((t & 7) === 4 || t === 0) break;
    else r.skip(t & 7);
  }
  r.depth--;
}

/** What the hand-written Struct code above reads and writes: [field number, wire type] by the SDK's property (for wire-guard.test.ts). */
export const structFields: Record<string, Record<string, readonly [no: number, wire: number]>> = {
  'google.protobuf.Struct': { fields: [1, 2] },
  'google.protobuf.Value': {
    nullValue: [1, 0],
    numberValue: [2, 1],
    stringValue: [3, 2],
    boolValue: [4, 0],
    structValue: [5, 2],
    listValue: [6, 2],
  },
  'google.protobuf.ListValue': { values: [1, 2] },
};

// ---------------------------------------------------------------- the messages
//
// A table per message the codec reads or writes (those of run_function.proto,
// and Duration) gives each field's number, the SDK's property for it and its
// kind: the type the .proto declares, the wire type, and how the field is read
// and written, as a JavaScript statement. compile() puts the statements
// together once, at load, into a reader and a writer per message: the loops
// one would write by hand, property names spelled out, so that V8 sees each
// message's own shape (one loop for all messages, looking properties up by
// name, measured 1-4 % slower on the examples). test/unit/wire-guard.test.ts
// fails when the SDK or the .proto has a field, number or type the tables
// do not.

/** A kind of field. */
export interface Kind {
  /** Its type as run_function.proto declares it (a oneof member as `optional`). */
  readonly proto: string;
  /** The wire type it is written in. */
  readonly wire: number;
  /** The message it holds (message, repeated and map fields). */
  readonly of: Message | undefined;
  /** Its default in the SDK's decoded message, as source. */
  readonly zero: string;
  /** By the wire type it arrives in: the statement that reads it into `p` (`out.name`). None where the codec never reads it. */
  readonly read: Readonly<Record<number, (p: string) => string>>;
  /** The statement that writes `v`, its value, under `tag`, left out where the SDK leaves it out. None where the codec never writes it. */
  readonly write: ((tag: number) => string) | undefined;
}

export interface Field {
  readonly no: number;
  /** The SDK's property (ts-proto's camelCase of the proto name). */
  readonly name: string;
  readonly kind: Kind;
}

export interface Message {
  /** Its name in the .proto. */
  readonly name: string;
  /** In field-number order, the order the SDK writes them in. */
  readonly fields: readonly Field[];
}

// The compiled functions' names.
const reader = (m: Message) => `read_${m.name.replace(/\W/g, '_')}`;
const writer = (m: Message) => `put_${m.name.replace(/\W/g, '_')}`;
const empty = (m: Message) => `new_${m.name.replace(/\W/g, '_')}`;

type KindSpec = Pick<Kind, 'proto' | 'wire' | 'zero'> & Partial<Pick<Kind, 'of' | 'read' | 'write'>>;
const kind = (k: KindSpec): Kind => ({ of: undefined, read: {}, write: undefined, ...k });

/** Reads a map entry {key = 1; value = 2}: `value` is the expression that reads field 2, `store` the statement that puts it in the map. */
const entry = (value: string, store: string) =>
  `{ const e = r.end(); r.enter(); let key = ''; let value; while (r.pos < e) { const t = r.varint(); if (t === 10) key = r.string(); else if (t === 18) value = ${value}; else if ((t & 7) === 4 || t === 0) break; else r.skip(t & 7); } r.depth--; ${store} }`;
/** Writes an entry {key = 1; value = 2} under `tag` per key of the map `v`; `value` is the statement that writes field 2. */
const entries = (tag: number, value: string) =>
  `for (const [key, value] of Object.entries(v)) { const entry = open(${tag}); if (key !== '') putString(10, key); ${value} close(entry); }`;

// A plain proto3 scalar is left out at its default; an optional field, a oneof
// member or a message when undefined.
const string = kind({
  proto: 'string',
  wire: 2,
  zero: "''",
  read: { 2: (p) => `${p} = r.string();` },
  write: (t) => `if (v !== '') putString(${t}, v);`,
});
const optionalString = kind({
  proto: 'optional string',
  wire: 2,
  zero: 'undefined',
  write: (t) => `if (v !== undefined) putString(${t}, v);`,
});
const varint = (t: number) => `if (v !== 0) tagVarint(${t}, v);`;
/** An int32 or an enum. */
const int32 = (proto: string) =>
  kind({ proto, wire: 0, zero: '0', read: { 0: (p) => `${p} = r.int32();` }, write: varint });
const optionalEnum = (proto: string) =>
  kind({
    proto: `optional ${proto}`,
    wire: 0,
    zero: 'undefined',
    write: (t) => `if (v !== undefined) tagVarint(${t}, v);`,
  });
/** Duration.seconds, written only: putVarint writes it exactly from -2^31 to 2^53. */
const int64 = kind({ proto: 'int64', wire: 0, zero: '0', write: varint });
/** Read packed (wire type 2, as the SDK writes it) or one by one (0). */
const repeatedEnum = (proto: string) =>
  kind({
    proto: `repeated ${proto}`,
    wire: 2,
    zero: '[]',
    read: { 0: (p) => `${p}.push(r.int32());`, 2: (p) => `for (const e = r.end(); r.pos < e; ) ${p}.push(r.int32());` },
  });
const struct = (optional: boolean) =>
  kind({
    proto: `${optional ? 'optional ' : ''}google.protobuf.Struct`,
    wire: 2,
    zero: 'undefined',
    read: { 2: (p) => `${p} = readStruct(r, r.end());` },
    write: (t) => `if (v !== undefined) { const at = open(${t}); putStruct(v); close(at); }`,
  });
/** A required schema: frozen, and shared between calls that send the same bytes (readSharedStruct). */
const sharedStruct = kind({ ...struct(true), read: { 2: (p) => `${p} = readSharedStruct(r, r.end());` } });
/** A Resource's object: shared where it answers a required resource (in `items` below), decoded as it comes elsewhere. */
const resourceStruct = kind({
  ...struct(false),
  read: { 2: (p) => `${p} = r.shared > 0 ? readSharedStruct(r, r.end()) : readStruct(r, r.end());` },
});
/** The Resources answering a required resource. */
const sharedItems = (of: Message) =>
  kind({
    ...repeated(of),
    read: { 2: (p) => `r.shared++; ${p}.push(${reader(of)}(r, r.end())); r.shared--;` },
  });
const one = (of: Message, optional = false) =>
  kind({
    proto: `${optional ? 'optional ' : ''}${of.name}`,
    wire: 2,
    of,
    zero: 'undefined',
    read: { 2: (p) => `${p} = ${reader(of)}(r, r.end());` },
    write: (t) => `if (v !== undefined) { const at = open(${t}); ${writer(of)}(v); close(at); }`,
  });
const repeated = (of: Message) =>
  kind({
    proto: `repeated ${of.name}`,
    wire: 2,
    of,
    zero: '[]',
    read: { 2: (p) => `${p}.push(${reader(of)}(r, r.end()));` },
    write: (t) => `for (const item of v) { const at = open(${t}); ${writer(of)}(item); close(at); }`,
  });
const map = (of: Message) =>
  kind({
    proto: `map<string, ${of.name}>`,
    wire: 2,
    of,
    zero: '{}',
    read: {
      2: (p) =>
        entry(
          `${reader(of)}(r, r.end())`,
          `if (value !== undefined) { if (key !== '__proto__') ${p}[key] = value; else ownKey(${p}, key, value); }`,
        ),
    },
    write: (t) => entries(t, `if (value !== undefined) { const at = open(18); ${writer(of)}(value); close(at); }`),
  });
/** A bytes value is read as a copy, as the SDK makes, and as empty when absent. */
const bytesMap = kind({
  proto: 'map<string, bytes>',
  wire: 2,
  zero: '{}',
  read: {
    2: (p) =>
      entry(
        'r.bytes()',
        `if (key !== '__proto__') ${p}[key] = value ?? Buffer.alloc(0); else ownKey(${p}, key, value ?? Buffer.alloc(0));`,
      ),
  },
  write: (t) => entries(t, 'putBytes(18, value);'),
});
const stringMap = kind({
  proto: 'map<string, string>',
  wire: 2,
  zero: '{}',
  write: (t) => entries(t, "if (value !== '') putString(18, value);"),
});

/** A table: every property of the SDK's message T, with its field number and kind. */
function message<T extends object>(
  name: string,
  table: { [K in keyof T]-?: readonly [no: number, kind: Kind] },
): Message {
  const fields = Object.entries(table as Record<string, readonly [number, Kind]>).map(([prop, [no, kind]]) => {
    // The writer puts a tag in one byte; the compiled code spells the property out.
    if (no < 1 || no > 15) throw new Error(`${name}.${prop}: field ${no} needs a tag of more than one byte`);
    if (!/^[A-Za-z_$][\w$]*$/.test(prop)) throw new Error(`${name}.${prop}: not an identifier`);
    return { no, name: prop, kind };
  });
  return { name, fields };
}

/** A non-empty bytes field (the SDK leaves an empty one out). */
function putBytes(tag: number, bytes: Uint8Array): void {
  if (bytes.length === 0) return;
  ensure(6 + bytes.byteLength);
  buf[pos++] = tag;
  putVarint(bytes.byteLength);
  buf.set(bytes, pos);
  pos += bytes.byteLength;
}

/** Every message reachable from `root` through message, repeated and map fields. */
function reachable(root: Message, seen = new Set<Message>()): Set<Message> {
  if (!seen.has(root)) {
    seen.add(root);
    for (const f of root.fields) if (f.kind.of) reachable(f.kind.of, seen);
  }
  return seen;
}

/** A message's reader, as source: a case per tag, the rest skipped as the SDK's decoder skips it; and the empty message it starts from. */
function readerSource(m: Message): string {
  const cases = m.fields.flatMap((f) => {
    const reads = Object.entries(f.kind.read);
    if (reads.length === 0)
      throw new Error(`${m.name}.${f.name}: the codec reads ${m.name}, and cannot read this kind`);
    return reads.map(([wire, read]) => `case ${(f.no << 3) | Number(wire)}: ${read(`out.${f.name}`)} continue;`);
  });
  return `function ${empty(m)}() { return { ${m.fields.map((f) => `${f.name}: ${f.kind.zero}`).join(', ')} }; }
function ${reader(m)}(r, end) {
  r.enter();
  const out = ${empty(m)}();
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag) {
      ${cases.join('\n      ')}
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return out;
}
`;
}

/** A message's writer, as source: the fields in field order, as the SDK's encoder writes them. */
function writerSource(m: Message): string {
  const fields = m.fields.map((f) => {
    if (!f.kind.write) throw new Error(`${m.name}.${f.name}: the codec writes ${m.name}, and cannot write this kind`);
    return `v = m.${f.name};\n  ${f.kind.write((f.no << 3) | f.kind.wire)}`;
  });
  return `function ${writer(m)}(m) {\n  let v;\n  ${fields.join('\n  ')}\n}\n`;
}

/** The readers of every message reachable from `read` and the writers of every one reachable from `written`, compiled. */
function compile(read: Message, written: Message) {
  const readers = [...reachable(read)];
  const writers = [...reachable(written)];
  const src = `${readers.map(readerSource).join('')}${writers.map(writerSource).join('')}
return {
  read: ${reader(read)},
  put: ${writer(written)},
  empty: { ${readers.map((m) => `${JSON.stringify(m.name)}: ${empty(m)}`).join(', ')} },
};`;
  const helpers = {
    Buffer,
    ownKey,
    readStruct,
    readSharedStruct,
    putStruct,
    putString,
    putBytes,
    tagVarint,
    open,
    close,
  };
  return new Function(...Object.keys(helpers), src)(...Object.values(helpers)) as {
    read: (r: Reader, end: number) => RunFunctionRequest;
    put: (m: RunFunctionResponse) => void;
    empty: Record<string, () => object>;
  };
}

// The tables, in the .proto's order. The request's messages are read, the
// response's written; State and Resource both.

type Req = RunFunctionRequest;
type Rsp = RunFunctionResponse;
type StateT = NonNullable<Req['observed']>;
type MetaT = NonNullable<Rsp['meta']>;
type RequirementsT = NonNullable<Rsp['requirements']>;
type SelectorT = RequirementsT['resources'][string];

const Resource = message<NonNullable<StateT['composite']>>('Resource', {
  resource: [1, resourceStruct],
  connectionDetails: [2, bytesMap],
  ready: [3, int32('Ready')],
});
const State = message<StateT>('State', { composite: [1, one(Resource)], resources: [2, map(Resource)] });

const RequestMeta = message<NonNullable<Req['meta']>>('RequestMeta', {
  tag: [1, string],
  capabilities: [2, repeatedEnum('Capability')],
});
const Resources = message<Req['requiredResources'][string]>('Resources', { items: [1, sharedItems(Resource)] });
const CredentialData = message<NonNullable<Req['credentials'][string]['credentialData']>>('CredentialData', {
  data: [1, bytesMap],
});
const Credentials = message<Req['credentials'][string]>('Credentials', {
  credentialData: [1, one(CredentialData, true)],
});
const Schema = message<Req['requiredSchemas'][string]>('Schema', { openapiV3: [1, sharedStruct] });

/** RunFunctionRequest: the message the codec reads. */
export const requestTable = message<Req>('RunFunctionRequest', {
  meta: [1, one(RequestMeta)],
  observed: [2, one(State)],
  desired: [3, one(State)],
  input: [4, struct(true)],
  context: [5, struct(true)],
  extraResources: [6, map(Resources)],
  credentials: [7, map(Credentials)],
  requiredResources: [8, map(Resources)],
  requiredSchemas: [9, map(Schema)],
});

const Duration = message<NonNullable<MetaT['ttl']>>('google.protobuf.Duration', {
  seconds: [1, int64],
  nanos: [2, int32('int32')],
});
const ResponseMeta = message<MetaT>('ResponseMeta', { tag: [1, string], ttl: [2, one(Duration, true)] });
const Result = message<Rsp['results'][number]>('Result', {
  severity: [1, int32('Severity')],
  message: [2, string],
  reason: [3, optionalString],
  target: [4, optionalEnum('Target')],
});
const MatchLabels = message<NonNullable<SelectorT['matchLabels']>>('MatchLabels', { labels: [1, stringMap] });
const ResourceSelector = message<SelectorT>('ResourceSelector', {
  apiVersion: [1, string],
  kind: [2, string],
  matchName: [3, optionalString],
  matchLabels: [4, one(MatchLabels, true)],
  namespace: [5, optionalString],
});
const SchemaSelector = message<RequirementsT['schemas'][string]>('SchemaSelector', {
  apiVersion: [1, string],
  kind: [2, string],
});
const Requirements = message<RequirementsT>('Requirements', {
  extraResources: [1, map(ResourceSelector)],
  resources: [2, map(ResourceSelector)],
  schemas: [3, map(SchemaSelector)],
});
const Condition = message<Rsp['conditions'][number]>('Condition', {
  type: [1, string],
  status: [2, int32('Status')],
  reason: [3, string],
  message: [4, optionalString],
  target: [5, optionalEnum('Target')],
});

/** RunFunctionResponse: the message the codec writes. */
export const responseTable = message<Rsp>('RunFunctionResponse', {
  meta: [1, one(ResponseMeta)],
  desired: [2, one(State)],
  results: [3, repeated(Result)],
  context: [4, struct(true)],
  requirements: [5, one(Requirements)],
  conditions: [6, repeated(Condition)],
  output: [7, struct(true)],
});

const codec = compile(requestTable, responseTable);

/** The empty message a table's reader starts from: the SDK decoder's, as wire-guard.test.ts checks. */
export const emptyMessage = (m: Message): object => codec.empty[m.name]!();

// ---------------------------------------------------------------- the codec

/**
 * RunFunctionResponse to protobuf bytes: the SDK's `RunFunctionResponse.encode(m).finish()`, faster. The
 * bytes go into `into(length)` when given (memory the transport reuses), else into a new Buffer.
 */
export function encodeRunFunctionResponse(m: RunFunctionResponse, into?: (length: number) => Buffer): Buffer {
  pos = 0;
  try {
    codec.put(m);
    if (!into) return Buffer.from(buf.subarray(0, pos));
    const out = into(pos);
    buf.copy(out, 0, 0, pos);
    return out;
  } finally {
    // A huge answer should not pin a huge scratch buffer.
    if (buf.length > 1024 * 1024) buf = Buffer.allocUnsafe(64 * 1024) as NodeBuffer;
    pos = 0;
  }
}

/**
 * Protobuf bytes to RunFunctionRequest: what the SDK's `RunFunctionRequest.decode(bytes)` returns, faster.
 * The objects of required schemas and resources come frozen, and may be the very objects an earlier call
 * got (see readSharedStruct). Other Struct values of `lazyMin` bytes or more are checked now and built when
 * first read (Infinity: all now), so
 * the bytes must not change while the request is in use: grpc-js hands each message its own buffer, and
 * src/grpc-http2.ts reuses a request's memory only when lastDecodeHoldsBytes() says nothing points into it.
 */
export function decodeRunFunctionRequest(bytes: Buffer | Uint8Array, lazyMin = LAZY_MIN): RunFunctionRequest {
  const buf = (
    Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  ) as NodeBuffer;
  // Until the decode is done, as if it held them: a decode that throws has said nothing of them.
  lastDeferred = true;
  const r = new Reader(buf, lazyMin);
  const request = codec.read(r, buf.length);
  lastDeferred = r.deferred;
  return request;
}

let lastDeferred = false;

/** Whether the request decodeRunFunctionRequest returned last still points into its bytes (a value not yet built). */
export const lastDecodeHoldsBytes = (): boolean => lastDeferred;

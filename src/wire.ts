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
// Here encoding takes two passes over the plain objects: the first measures
// every nested message and string (kept in one array, in visiting order), the
// second writes straight into one buffer of the exact size. Decoding reads the
// bytes straight into plain objects. The output is byte-for-byte what the
// SDK's encoder writes (same field order, same omissions), and the decoder
// returns what the SDK's decoder returns; test/unit/wire.test.ts and bench/wire-check.ts check both on
// every example and on random objects.
import type { RunFunctionRequest, RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';

// Node's own UTF-8 copies (Buffer.prototype, undocumented but stable; what
// protobufjs uses): no encoding lookup per call, unlike write() and toString().
type NodeBuffer = Buffer & { utf8Write(s: string, offset: number, length: number): number; utf8Slice(start: number, end: number): string; latin1Slice(start: number, end: number): string };

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

type Rsp = RunFunctionResponse;
type Res = NonNullable<NonNullable<Rsp['desired']>['composite']>;
type Sel = NonNullable<NonNullable<Rsp['requirements']>['resources'][string]>;

function putResource(r: Res): void {
  if (r.resource !== undefined) {
    const at = open(10);
    putStruct(r.resource);
    close(at);
  }
  for (const [key, value] of Object.entries(r.connectionDetails)) {
    const at = open(18);
    if (key !== '') putString(10, key);
    if (value.length !== 0) {
      ensure(6 + value.byteLength);
      buf[pos++] = 18;
      putVarint(value.byteLength);
      buf.set(value, pos);
      pos += value.byteLength;
    }
    close(at);
  }
  if (r.ready !== 0) tagVarint(24, r.ready);
}

function putSelector(s: Sel): void {
  if (s.apiVersion !== '') putString(10, s.apiVersion);
  if (s.kind !== '') putString(18, s.kind);
  if (s.matchName !== undefined) putString(26, s.matchName);
  if (s.matchLabels !== undefined) {
    const labels = open(34);
    for (const [k, v] of Object.entries(s.matchLabels.labels)) {
      const at = open(10);
      if (k !== '') putString(10, k);
      if (v !== '') putString(18, v);
      close(at);
    }
    close(labels);
  }
  if (s.namespace !== undefined) putString(42, s.namespace);
}

/** A map<string, Message> field: one entry message {key = 1; value = 2} per key. */
function putMap<T>(tag: number, map: Record<string, T>, value: (v: T) => void): void {
  for (const [k, v] of Object.entries(map)) {
    const entry = open(tag);
    if (k !== '') putString(10, k);
    if (v !== undefined) {
      const at = open(18);
      value(v);
      close(at);
    }
    close(entry);
  }
}

function putResponse(m: Rsp): void {
  if (m.meta !== undefined) {
    const meta = open(10);
    if (m.meta.tag !== '') putString(10, m.meta.tag);
    const ttl = m.meta.ttl;
    if (ttl !== undefined) {
      const at = open(18);
      if (ttl.seconds !== 0) tagVarint(8, ttl.seconds);
      if (ttl.nanos !== 0) tagVarint(16, ttl.nanos);
      close(at);
    }
    close(meta);
  }
  if (m.desired !== undefined) {
    const desired = open(18);
    if (m.desired.composite !== undefined) {
      const at = open(10);
      putResource(m.desired.composite);
      close(at);
    }
    putMap(18, m.desired.resources, putResource);
    close(desired);
  }
  for (const r of m.results) {
    const at = open(26);
    if (r.severity !== 0) tagVarint(8, r.severity);
    if (r.message !== '') putString(18, r.message);
    if (r.reason !== undefined) putString(26, r.reason);
    if (r.target !== undefined) tagVarint(32, r.target);
    close(at);
  }
  if (m.context !== undefined) {
    const at = open(34);
    putStruct(m.context);
    close(at);
  }
  if (m.requirements !== undefined) {
    const at = open(42);
    putMap(10, m.requirements.extraResources, putSelector);
    putMap(18, m.requirements.resources, putSelector);
    putMap(26, m.requirements.schemas, (s) => {
      if (s.apiVersion !== '') putString(10, s.apiVersion);
      if (s.kind !== '') putString(18, s.kind);
    });
    close(at);
  }
  for (const c of m.conditions) {
    const at = open(50);
    if (c.type !== '') putString(10, c.type);
    if (c.status !== 0) tagVarint(16, c.status);
    if (c.reason !== '') putString(26, c.reason);
    if (c.message !== undefined) putString(34, c.message);
    if (c.target !== undefined) tagVarint(40, c.target);
    close(at);
  }
  if (m.output !== undefined) {
    const at = open(58);
    putStruct(m.output);
    close(at);
  }
}

/** RunFunctionResponse to protobuf bytes: the SDK's `RunFunctionResponse.encode(m).finish()`, faster. */
export function encodeRunFunctionResponse(m: RunFunctionResponse): Buffer {
  pos = 0;
  try {
    putResponse(m);
    return Buffer.from(buf.subarray(0, pos));
  } finally {
    // A huge answer should not pin a huge scratch buffer.
    if (buf.length > 1024 * 1024) buf = Buffer.allocUnsafe(64 * 1024) as NodeBuffer;
    pos = 0;
  }
}

// ---------------------------------------------------------------- decoding
//
// Straight into plain objects. Every message counts towards the SDK's nesting
// limit exactly as the SDK's decoder counts it (each message decoded, map
// entries and Values included), so what one refuses the other refuses.

const MAX_DEPTH = 100;

// Short ASCII strings (keys, kinds, names, label values) repeat from call to
// call: a small table keeps the last string seen per hash, so a repeat costs
// a comparison instead of an allocation.
const INTERN_MAX = 40;
const INTERN_SLOTS = 4096;
const interned: Array<string | undefined> = new Array<string | undefined>(INTERN_SLOTS).fill(undefined);

class Reader {
  pos = 0;
  depth = 0;
  constructor(readonly buf: NodeBuffer) {}

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
        else if (t === 18) value = readValue(r, r.end());
        else if ((t & 7) === 4 || t === 0) break;
        else r.skip(t & 7);
      }
      r.depth--;
      if (value !== undefined) out[key] = value;
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return out;
}

type Req = RunFunctionRequest;
type ReqResource = NonNullable<NonNullable<Req['observed']>['composite']>;

/** A map entry {key = 1; value = 2}; `value` reads field 2's length-delimited body. */
function readEntry<T>(r: Reader, value: (r: Reader, end: number) => T): { key: string; value: T | undefined } {
  const end = r.end();
  r.enter();
  let key = '';
  let v: T | undefined;
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) key = r.string();
    else if (tag === 18) v = value(r, r.end());
    else if ((tag & 7) === 4 || tag === 0) break;
    else r.skip(tag & 7);
  }
  r.depth--;
  return { key, value: v };
}

/** A bytes map value: the SDK decodes it as a copy, and an absent one as empty. */
const bytesValue = (r: Reader, end: number): Buffer => {
  const out = Buffer.from(r.buf.subarray(r.pos, end));
  r.pos = end;
  return out;
};

function readResource(r: Reader, end: number): ReqResource {
  r.enter();
  const out: ReqResource = { resource: undefined, connectionDetails: {}, ready: 0 };
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag) {
      case 10:
        out.resource = readStruct(r, r.end());
        continue;
      case 18: {
        const e = readEntry(r, bytesValue);
        out.connectionDetails[e.key] = e.value ?? Buffer.alloc(0);
        continue;
      }
      case 24:
        out.ready = r.int32();
        continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return out;
}

function readState(r: Reader, end: number): NonNullable<Req['observed']> {
  r.enter();
  const out: NonNullable<Req['observed']> = { composite: undefined, resources: {} };
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) {
      out.composite = readResource(r, r.end());
      continue;
    }
    if (tag === 18) {
      const e = readEntry(r, readResource);
      if (e.value !== undefined) out.resources[e.key] = e.value;
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return out;
}

function readResources(r: Reader, end: number): { items: ReqResource[] } {
  r.enter();
  const items: ReqResource[] = [];
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) {
      items.push(readResource(r, r.end()));
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return { items };
}

function readCredentialData(r: Reader, end: number): { data: Record<string, Buffer> } {
  r.enter();
  const data: Record<string, Buffer> = {};
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) {
      const e = readEntry(r, bytesValue);
      data[e.key] = e.value ?? Buffer.alloc(0);
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return { data };
}

function readCredentials(r: Reader, end: number): Req['credentials'][string] {
  r.enter();
  const out: Req['credentials'][string] = { credentialData: undefined };
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) {
      out.credentialData = readCredentialData(r, r.end());
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return out;
}

function readSchema(r: Reader, end: number): Req['requiredSchemas'][string] {
  r.enter();
  const out: Req['requiredSchemas'][string] = { openapiV3: undefined };
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) {
      out.openapiV3 = readStruct(r, r.end());
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return out;
}

function readMeta(r: Reader, end: number): NonNullable<Req['meta']> {
  r.enter();
  const out: NonNullable<Req['meta']> = { tag: '', capabilities: [] };
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) {
      out.tag = r.string();
      continue;
    }
    if (tag === 16) {
      out.capabilities.push(r.int32());
      continue;
    }
    if (tag === 18) {
      const packedEnd = r.end();
      while (r.pos < packedEnd) out.capabilities.push(r.int32());
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  r.depth--;
  return out;
}

/** Protobuf bytes to RunFunctionRequest: what the SDK's `RunFunctionRequest.decode(bytes)` returns, faster. */
export function decodeRunFunctionRequest(bytes: Buffer | Uint8Array): RunFunctionRequest {
  const buf = (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) as NodeBuffer;
  const r = new Reader(buf);
  const end = buf.length;
  r.enter();
  const out: RunFunctionRequest = {
    meta: undefined,
    observed: undefined,
    desired: undefined,
    input: undefined,
    context: undefined,
    extraResources: {},
    credentials: {},
    requiredResources: {},
    requiredSchemas: {},
  };
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag) {
      case 10:
        out.meta = readMeta(r, r.end());
        continue;
      case 18:
        out.observed = readState(r, r.end());
        continue;
      case 26:
        out.desired = readState(r, r.end());
        continue;
      case 34:
        out.input = readStruct(r, r.end());
        continue;
      case 42:
        out.context = readStruct(r, r.end());
        continue;
      case 50:
      case 66: {
        const e = readEntry(r, readResources);
        if (e.value !== undefined) (tag === 50 ? out.extraResources : out.requiredResources)[e.key] = e.value;
        continue;
      }
      case 58: {
        const e = readEntry(r, readCredentials);
        if (e.value !== undefined) out.credentials[e.key] = e.value;
        continue;
      }
      case 74: {
        const e = readEntry(r, readSchema);
        if (e.value !== undefined) out.requiredSchemas[e.key] = e.value;
        continue;
      }
    }
    if ((tag & 7) === 4 || tag === 0) break;
    r.skip(tag & 7);
  }
  return out;
}

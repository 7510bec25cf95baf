// HPACK (RFC 7541), as a server of unary gRPC calls needs it: a full decoder
// of the client's header blocks (static and dynamic table, Huffman strings,
// table size updates), and an encoder that writes every field as a literal
// never added to the table, strings raw. The client's table is then never
// touched by us, and what the server sends needs no state.
import { HuffmanError, huffmanDecode } from './huffman.js';

/** The static table (RFC 7541, Appendix A): index 1 is the first entry. */
const STATIC: ReadonlyArray<readonly [string, string]> = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

/** What a table entry counts for: its octets and 32 more (RFC 7541, 4.1). */
const entrySize = (name: string, value: string) => name.length + value.length + 32;

/** A header block that cannot be decoded: HTTP/2 makes it a connection error (COMPRESSION_ERROR). */
export class HpackError extends Error {}

/** A header block larger, decoded, than the limit the server set: the call is refused, the connection lives. */
export class HeaderListTooLarge extends Error {}

/** One header field, name and value as octets (latin1). */
export type HeaderField = readonly [name: string, value: string];

/**
 * The decoding side of one connection: its dynamic table lives as long as the
 * connection, and every header block must pass through it in order, even one
 * whose stream is refused, or the next blocks decode wrong.
 */
export class HpackDecoder {
  /** Newest first: dynamic index 62 is dynamic[0]. */
  private readonly dynamic: HeaderField[] = [];
  private size = 0;
  private maxSize: number;
  private bytes: Uint8Array = new Uint8Array(0);
  private pos = 0;

  /** `limit`: the SETTINGS_HEADER_TABLE_SIZE the server announced (HTTP/2's default is 4096). */
  constructor(private readonly limit = 4096) {
    this.maxSize = limit;
  }

  /**
   * The fields of a whole header block. Past `maxListSize` (RFC 7541's size:
   * octets plus 32 a field) it throws HeaderListTooLarge once the block is
   * decoded, so the table stays right.
   */
  decode(block: Uint8Array, maxListSize: number): HeaderField[] {
    this.bytes = block;
    this.pos = 0;
    const fields: HeaderField[] = [];
    let listSize = 0;
    while (this.pos < block.length) {
      const b = block[this.pos]!;
      let field: HeaderField;
      if (b & 0x80) {
        field = this.entry(this.integer(7));
      } else if (b & 0x40) {
        field = this.literal(6);
        this.add(field);
      } else if (b & 0x20) {
        // A table size update: only before the block's first field.
        if (fields.length > 0) throw new HpackError('a table size update after a header field');
        const size = this.integer(5);
        if (size > this.limit) throw new HpackError(`a table size of ${size}, over the ${this.limit} allowed`);
        this.maxSize = size;
        this.evict(0);
        continue;
      } else {
        // Without indexing (0000) or never indexed (0001): the same to a server that keeps no proxy cache.
        field = this.literal(4);
      }
      listSize += entrySize(field[0], field[1]);
      fields.push(field);
    }
    this.bytes = new Uint8Array(0);
    if (listSize > maxListSize) throw new HeaderListTooLarge(`a header list of ${listSize} octets`);
    return fields;
  }

  private entry(index: number): HeaderField {
    if (index === 0) throw new HpackError('index 0');
    if (index <= STATIC.length) return STATIC[index - 1]!;
    const field = this.dynamic[index - STATIC.length - 1];
    if (!field) throw new HpackError(`index ${index} is past the table`);
    return field;
  }

  private literal(prefix: number): HeaderField {
    const index = this.integer(prefix);
    const name = index === 0 ? this.string() : this.entry(index)[0];
    return [name, this.string()];
  }

  private add(field: HeaderField): void {
    const size = entrySize(field[0], field[1]);
    // An entry larger than the table empties it and is not added (RFC 7541, 4.4).
    this.evict(size);
    if (size <= this.maxSize) {
      this.dynamic.unshift(field);
      this.size += size;
    }
  }

  /** Drops the oldest entries until `room` more octets fit. */
  private evict(room: number): void {
    while (this.size + room > this.maxSize && this.dynamic.length > 0) {
      const old = this.dynamic.pop()!;
      this.size -= entrySize(old[0], old[1]);
    }
  }

  /** An integer with an N-bit prefix (RFC 7541, 5.1), at most 2^28 here. */
  private integer(prefix: number): number {
    const max = (1 << prefix) - 1;
    if (this.pos >= this.bytes.length) throw new HpackError('a header block ends inside an integer');
    let value = this.bytes[this.pos++]! & max;
    if (value < max) return value;
    for (let shift = 0; ; shift += 7) {
      if (this.pos >= this.bytes.length) throw new HpackError('a header block ends inside an integer');
      if (shift > 21) throw new HpackError('an integer too large');
      const b = this.bytes[this.pos++]!;
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
    }
  }

  private string(): string {
    if (this.pos >= this.bytes.length) throw new HpackError('a header block ends before a string');
    const huffman = (this.bytes[this.pos]! & 0x80) !== 0;
    const length = this.integer(7);
    const start = this.pos;
    const end = start + length;
    if (end > this.bytes.length) throw new HpackError('a string runs past its header block');
    this.pos = end;
    if (!huffman) return Buffer.from(this.bytes.buffer, this.bytes.byteOffset + start, length).toString('latin1');
    try {
      return huffmanDecode(this.bytes, start, end);
    } catch (err) {
      if (err instanceof HuffmanError) throw new HpackError(err.message);
      throw err;
    }
  }
}

/** Writes an integer with an N-bit prefix whose high bits are `flags`. */
function putInteger(out: number[], flags: number, prefix: number, value: number): void {
  const max = (1 << prefix) - 1;
  if (value < max) {
    out.push(flags | value);
    return;
  }
  out.push(flags | max);
  let rest = value - max;
  while (rest >= 0x80) {
    out.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
}

function putString(out: number[], text: string): void {
  putInteger(out, 0, 7, text.length);
  for (let i = 0; i < text.length; i++) out.push(text.charCodeAt(i) & 0xff);
}

/**
 * A header block of these fields, each a literal never added to the table
 * (`:status: 200` is the static table's entry 8). Names are lower case, values
 * octets: the callers pass ASCII.
 */
export function encodeHeaders(fields: readonly HeaderField[]): Buffer {
  const out: number[] = [];
  for (const [name, value] of fields) {
    if (name === ':status' && value === '200') {
      out.push(0x88);
      continue;
    }
    const index = name === ':status' ? 8 : 0;
    putInteger(out, 0x00, 4, index);
    if (index === 0) putString(out, name);
    putString(out, value);
  }
  return Buffer.from(out);
}

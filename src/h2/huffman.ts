// HPACK's Huffman code (RFC 7541, Appendix B), decoding only: the server
// writes its own header strings raw. The code is canonical (codes of one
// length are consecutive, in symbol order, and each length's first code
// follows the last of the length before), so the code lengths alone define
// it: a code of `len` bits is symbol firstSymbol[len] + (code - firstCode[len]).

/** Each symbol's code length in bits: octets 0-255, then EOS (256). */
const CODE_LENGTHS = [
  13,
  23,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  24,
  30,
  28,
  28,
  30,
  28,
  28, // 0-15
  28,
  28,
  28,
  28,
  28,
  28,
  30,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  28, // 16-31
  6,
  10,
  10,
  12,
  13,
  6,
  8,
  11,
  10,
  10,
  8,
  11,
  8,
  6,
  6,
  6, // 32-47
  5,
  5,
  5,
  6,
  6,
  6,
  6,
  6,
  6,
  6,
  7,
  8,
  15,
  6,
  12,
  10, // 48-63
  13,
  6,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7, // 64-79
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  8,
  7,
  8,
  13,
  19,
  13,
  14,
  6, // 80-95
  15,
  5,
  6,
  5,
  6,
  5,
  6,
  6,
  6,
  5,
  7,
  7,
  6,
  6,
  6,
  5, // 96-111
  6,
  7,
  6,
  5,
  5,
  6,
  7,
  7,
  7,
  7,
  7,
  15,
  11,
  14,
  13,
  28, // 112-127
  20,
  22,
  20,
  20,
  22,
  22,
  22,
  23,
  22,
  23,
  23,
  23,
  23,
  23,
  24,
  23, // 128-143
  24,
  24,
  22,
  23,
  24,
  23,
  23,
  23,
  23,
  21,
  22,
  23,
  22,
  23,
  23,
  24, // 144-159
  22,
  21,
  20,
  22,
  22,
  23,
  23,
  21,
  23,
  22,
  22,
  24,
  21,
  22,
  23,
  23, // 160-175
  21,
  21,
  22,
  21,
  23,
  22,
  23,
  23,
  20,
  22,
  22,
  22,
  23,
  22,
  22,
  23, // 176-191
  26,
  26,
  20,
  19,
  22,
  23,
  22,
  25,
  26,
  26,
  26,
  27,
  27,
  26,
  24,
  25, // 192-207
  19,
  21,
  26,
  27,
  27,
  26,
  27,
  24,
  21,
  21,
  26,
  26,
  28,
  27,
  27,
  27, // 208-223
  20,
  24,
  20,
  21,
  22,
  21,
  21,
  23,
  22,
  22,
  25,
  25,
  24,
  24,
  26,
  23, // 224-239
  26,
  27,
  26,
  26,
  27,
  27,
  27,
  27,
  27,
  28,
  27,
  27,
  27,
  27,
  27,
  26, // 240-255
  30, // EOS
];

const EOS = 256;
const MIN_LEN = 5;
const MAX_LEN = 30;

/** The canonical code's tables, by length: its first code, how many codes, and where its symbols start in SYMBOLS. */
const FIRST_CODE = new Int32Array(MAX_LEN + 1);
const COUNT = new Int32Array(MAX_LEN + 1);
const FIRST_INDEX = new Int32Array(MAX_LEN + 1);
/** The symbols in code order: by length, then by symbol. */
const SYMBOLS = new Uint16Array(CODE_LENGTHS.length);
{
  for (const len of CODE_LENGTHS) COUNT[len]!++;
  let code = 0;
  let index = 0;
  for (let len = 1; len <= MAX_LEN; len++) {
    FIRST_CODE[len] = code;
    FIRST_INDEX[len] = index;
    index += COUNT[len]!;
    code = (code + COUNT[len]!) << 1;
  }
  const next = FIRST_INDEX.slice();
  for (let symbol = 0; symbol < CODE_LENGTHS.length; symbol++) SYMBOLS[next[CODE_LENGTHS[symbol]!]!++] = symbol;
}

/** A Huffman-coded string that is not one: what RFC 7541 says a decoder must refuse. */
export class HuffmanError extends Error {}

/**
 * The octets `bytes[start..end)` code, as a latin1 string (header names and
 * values are octets). Refuses EOS inside the string and padding that is longer
 * than 7 bits or not the most significant bits of EOS (all ones).
 */
export function huffmanDecode(bytes: Uint8Array, start: number, end: number): string {
  // No code is shorter than 5 bits: that bounds the octets decoded.
  const out = Buffer.allocUnsafe(Math.ceil(((end - start) * 8) / MIN_LEN));
  let n = 0;
  let code = 0;
  let len = 0;
  for (let i = start; i < end; i++) {
    const byte = bytes[i]!;
    for (let bit = 7; bit >= 0; bit--) {
      code = (code << 1) | ((byte >> bit) & 1);
      len++;
      if (len < MIN_LEN) continue;
      const offset = code - FIRST_CODE[len]!;
      if (offset >= 0 && offset < COUNT[len]!) {
        const symbol = SYMBOLS[FIRST_INDEX[len]! + offset]!;
        if (symbol === EOS) throw new HuffmanError('a Huffman-coded string holds EOS');
        out[n++] = symbol;
        code = 0;
        len = 0;
      } else if (len === MAX_LEN) throw new HuffmanError('a Huffman code longer than 30 bits');
    }
  }
  // What is left is padding: at most 7 bits, all ones.
  if (len > 7 || code !== (1 << len) - 1) throw new HuffmanError('a Huffman-coded string ends in bad padding');
  return out.toString('latin1', 0, n);
}

// Passwords the function generates, once per Database (read back from observed state on every later call).
import { randomBytes } from 'node:crypto';

const PASSWORD_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 32 characters from a cryptographic source: about 190 bits, and safe in URIs and shells. */
export function newPassword(): string {
  let out = '';
  while (out.length < 32) {
    for (const byte of randomBytes(48)) {
      // 248 = 4 × 62: dropping the rest keeps every character equally likely.
      if (byte < 248 && out.length < 32) out += PASSWORD_ALPHABET[byte % 62];
    }
  }
  return out;
}

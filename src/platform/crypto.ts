import { createCipheriv, createDecipheriv, createHash, hash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';

/**
 * A bearer secret: `prefix` + 32 random bytes in base64url. The prefix lets
 * secret scanners recognise a leaked token and tells a human what it is.
 */
export function randomToken(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** SHA-256 as base64url: the only form in which bearer secrets are stored. */
export function sha256(value: string | Buffer): string {
  return hash('sha256', value, 'base64url');
}

/**
 * Constant-time string comparison. Both sides are hashed first so that the
 * comparison takes the same time whatever their lengths.
 */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM with a random 96-bit IV; output is base64url(iv | tag | ciphertext). */
export function encrypt(key: Buffer, plaintext: string, associatedData?: string): string {
  if (key.length !== 32) throw new Error('AES-256-GCM needs a 32-byte key');
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** Inverse of {@link encrypt}; throws when the key, data or associated data do not match. */
export function decrypt(key: Buffer, sealed: string, associatedData?: string): string {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('ciphertext too short');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}

/**
 * Opens `sealed` with the first of `keys` that opens it (the current key,
 * then the ones being retired); `keyIndex` tells which did. Throws when
 * none does.
 */
export function decryptWithAny(keys: readonly Buffer[], sealed: string, associatedData?: string): { plaintext: string; keyIndex: number } {
  for (let i = 0; i < keys.length; i++) {
    try {
      return { plaintext: decrypt(keys[i]!, sealed, associatedData), keyIndex: i };
    } catch {
      // the next key, if any
    }
  }
  throw new Error('no key opens this ciphertext');
}

/** Random bytes for uuidV7, drawn from the CSPRNG a few thousand ids at a time (one call per id would cost more than the id). */
const pool = Buffer.alloc(10 * 4096);
let poolAt = pool.length;

/**
 * A UUID version 7 (RFC 9562 section 5.7): 48 bits of Unix time in
 * milliseconds, then 74 random bits. Ids made later sort later, so a table
 * keyed by them grows at its end (the gateway's usage records: each insert
 * appends to its indexes instead of splitting pages all over them), and the
 * id still cannot be guessed.
 */
export function uuidV7(now = Date.now()): string {
  if (poolAt + 10 > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const b = Buffer.allocUnsafe(16);
  b.writeUIntBE(now, 0, 6);
  pool.copy(b, 6, poolAt, poolAt + 10);
  poolAt += 10;
  b[6] = (b[6]! & 0x0f) | 0x70; // version 7
  b[8] = (b[8]! & 0x3f) | 0x80; // variant 10
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { decrypt, encrypt, randomToken, safeEqual, sha256 } from '../../src/platform/crypto.ts';

describe('randomToken', () => {
  test('is the prefix and 32 random bytes as 43 base64url characters', () => {
    const token = randomToken('ses_');
    assert.match(token, /^ses_[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(token.slice(4), 'base64url').length, 32);
    assert.match(randomToken(''), /^[A-Za-z0-9_-]{43}$/);
  });

  test('never repeats', () => {
    const seen = new Set(Array.from({ length: 2000 }, () => randomToken('vt_')));
    assert.equal(seen.size, 2000);
  });
});

describe('sha256', () => {
  test('is the standard digest in base64url, the same for a string and its UTF-8 bytes', () => {
    assert.equal(sha256('abc'), 'ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
    assert.equal(sha256(''), '47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU');
    assert.equal(sha256('héllo'), sha256(Buffer.from('héllo', 'utf8')));
    assert.equal(sha256('héllo'), createHash('sha256').update('héllo').digest('base64url'));
  });

  test('is stable and tells different inputs apart', () => {
    const token = randomToken('ses_');
    assert.equal(sha256(token), sha256(token));
    assert.notEqual(sha256(token), sha256(`${token}x`));
    assert.match(sha256(token), /^[A-Za-z0-9_-]{43}$/);
  });
});

describe('safeEqual', () => {
  test('is true only for identical strings, whatever their lengths', () => {
    assert.equal(safeEqual('secret-key', 'secret-key'), true);
    assert.equal(safeEqual('', ''), true);
    assert.equal(safeEqual('secret-key', 'secret-kez'), false);
    assert.equal(safeEqual('secret-key', 'secret-key '), false);
    assert.equal(safeEqual('secret-key', ''), false);
    assert.equal(safeEqual('', 'secret-key'), false);
    assert.equal(safeEqual('a'.repeat(10_000), 'a'.repeat(10_001)), false);
    assert.equal(safeEqual('é', 'e\u0301'), false, 'compares code units, not normalised text');
  });
});

describe('encrypt / decrypt (AES-256-GCM)', () => {
  const key = randomBytes(32);

  test('round-trips text, including empty and non-ASCII', () => {
    for (const text of ['hello', '', 'ünïcødé 😀 ✓', 'x'.repeat(100_000)]) {
      assert.equal(decrypt(key, encrypt(key, text)), text);
      assert.equal(decrypt(key, encrypt(key, text, 'user:1'), 'user:1'), text);
    }
  });

  test('output is base64url, fresh each time (random IV), and not the plaintext', () => {
    const a = encrypt(key, 'the same secret');
    const b = encrypt(key, 'the same secret');
    assert.notEqual(a, b);
    assert.match(a, /^[A-Za-z0-9_-]+$/);
    assert.equal(Buffer.from(a, 'base64url').length, 12 + 16 + 'the same secret'.length);
    assert.ok(!Buffer.from(a, 'base64url').includes('the same secret'));
  });

  test('a tampered ciphertext throws: any flipped byte of IV, tag or body', () => {
    const sealed = Buffer.from(encrypt(key, 'pay 10 EUR', 'aad'), 'base64url');
    for (const i of [0, 11, 12, 27, 28, sealed.length - 1]) {
      const bad = Buffer.from(sealed);
      bad[i]! ^= 0x01;
      assert.throws(() => decrypt(key, bad.toString('base64url'), 'aad'), /unable to authenticate|Invalid/i, `byte ${i}`);
    }
    assert.throws(() => decrypt(key, sealed.subarray(0, sealed.length - 1).toString('base64url'), 'aad'), /unable to authenticate/, 'truncated');
    assert.throws(() => decrypt(key, 'c2hvcnQ'), /too short/);
  });

  test('the wrong key throws', () => {
    const sealed = encrypt(key, 'secret');
    assert.throws(() => decrypt(randomBytes(32), sealed));
    assert.throws(() => encrypt(randomBytes(16), 'secret'), /32-byte key/);
  });

  test('the wrong associated data throws, as does adding or omitting it', () => {
    const sealed = encrypt(key, 'secret', 'client:a');
    assert.throws(() => decrypt(key, sealed, 'client:b'));
    assert.throws(() => decrypt(key, sealed));
    assert.throws(() => decrypt(key, encrypt(key, 'secret'), 'client:a'));
  });
});

describe('uuidV7', () => {
  test('RFC 9562 layout: version 7, variant 10, the time in the first 48 bits', async () => {
    const { uuidV7 } = await import('../../src/platform/crypto.ts');
    const now = Date.UTC(2026, 10, 23, 12, 0, 0);
    const id = uuidV7(now);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16), now);
  });

  test('later ids sort later; ids of the same millisecond differ', async () => {
    const { uuidV7 } = await import('../../src/platform/crypto.ts');
    const ids = Array.from({ length: 5000 }, (_, i) => uuidV7(1_800_000_000_000 + Math.floor(i / 10)));
    assert.equal(new Set(ids).size, ids.length);
    for (let i = 10; i < ids.length; i += 10) assert.ok(ids[i - 1]! < ids[i]!, 'a later millisecond sorts after');
  });
});

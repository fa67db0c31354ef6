import { describe, expect, it } from 'vitest';
import { signHmacSha256, verifyHmacSha256 } from '../../../src/webhooks/hmac-sha256.js';

// GitHub's published test vector; its X-Hub-Signature-256 uses the same algorithm.
const GITHUB_SECRET = "It's a Secret to Everybody";
const GITHUB_BODY = 'Hello, World!';
const GITHUB_SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

describe('hmac-sha256 signatures', () => {
  it('signs the published vector as GitHub does', () => {
    expect(signHmacSha256(GITHUB_BODY, GITHUB_SECRET)).toBe(GITHUB_SIGNATURE);
  });

  it('verifies the published vector', () => {
    expect(verifyHmacSha256(GITHUB_BODY, GITHUB_SIGNATURE, [GITHUB_SECRET])).toEqual({
      ok: true,
      secretIndex: 0,
    });
  });

  it('accepts the signature without the sha256= prefix and in upper case', () => {
    const bare = GITHUB_SIGNATURE.slice('sha256='.length).toUpperCase();
    expect(verifyHmacSha256(GITHUB_BODY, bare, [GITHUB_SECRET]).ok).toBe(true);
    expect(verifyHmacSha256(GITHUB_BODY, `SHA256=${bare}`, [GITHUB_SECRET]).ok).toBe(true);
  });

  it('refuses a body signed with another secret', () => {
    const signature = signHmacSha256(GITHUB_BODY, 'another secret');
    expect(verifyHmacSha256(GITHUB_BODY, signature, [GITHUB_SECRET])).toEqual({
      ok: false,
      reason: 'mismatch',
    });
  });

  it('refuses the signature of a different body', () => {
    expect(verifyHmacSha256('Hello, World?', GITHUB_SIGNATURE, [GITHUB_SECRET]).ok).toBe(false);
  });

  it.each(['', 'sha256=', 'sha1=757107ea', 'sha256=xyz', `${GITHUB_SIGNATURE}00`, 'sha256=757107'])(
    'calls %j malformed',
    (signature) => {
      expect(verifyHmacSha256(GITHUB_BODY, signature, [GITHUB_SECRET])).toEqual({
        ok: false,
        reason: 'malformed',
      });
    },
  );

  it('says which of several secrets matched', () => {
    const signature = signHmacSha256(GITHUB_BODY, 'old secret');
    expect(verifyHmacSha256(GITHUB_BODY, signature, ['new secret', 'old secret'])).toEqual({
      ok: true,
      secretIndex: 1,
    });
  });

  it('verifies a body with multibyte characters against its exact bytes', () => {
    const body = Buffer.from('{"title":"Größe 😕 — ünïcödé"}', 'utf8');
    const signature = signHmacSha256(body, GITHUB_SECRET);
    expect(verifyHmacSha256(body, signature, [GITHUB_SECRET]).ok).toBe(true);
    // The same text in another normalization is other bytes, and does not verify.
    const decomposed = Buffer.from(body.toString('utf8').normalize('NFD'), 'utf8');
    expect(verifyHmacSha256(decomposed, signature, [GITHUB_SECRET]).ok).toBe(false);
  });

  it('verifies a body with invalid UTF-8 against its exact bytes', () => {
    const body = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0x22, 0x7d]);
    const signature = signHmacSha256(body, GITHUB_SECRET);
    expect(verifyHmacSha256(body, signature, [GITHUB_SECRET]).ok).toBe(true);
    // Decoding and re-encoding replaces the bad bytes, which breaks the signature.
    const roundTripped = Buffer.from(body.toString('utf8'), 'utf8');
    expect(verifyHmacSha256(roundTripped, signature, [GITHUB_SECRET]).ok).toBe(false);
  });
});

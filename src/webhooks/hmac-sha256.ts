/**
 * The default scheme, as Ybug (and GitHub) sign deliveries: `X-Ybug-Signature: sha256=<hex>`,
 * an HMAC-SHA256 of the raw body bytes keyed with the shared secret.
 */
import { createHmac, timingSafeEqual, type KeyObject, createSecretKey } from 'node:crypto';
import { signatureMalformed, signatureMismatch, type SignatureCheck } from './signature-check.js';

const PREFIX = 'sha256=';
const HEX_DIGEST = /^[0-9a-f]{64}$/i;

/** Signs a body: returns the header value `sha256=<lowercase hex>`. */
export function signHmacSha256(body: string | Uint8Array, secret: string): string {
  return PREFIX + createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * Checks a signature header value against every accepted secret. The `sha256=` prefix is
 * optional and the hex is case-insensitive.
 *
 * @example
 * verifyHmacSha256(rawBody, req.headers['x-ybug-signature'], ['new-secret', 'old-secret']);
 */
export function verifyHmacSha256(
  body: string | Uint8Array,
  signature: string,
  secrets: readonly string[],
): SignatureCheck {
  return createHmacSha256Verifier(secrets)(body, signature);
}

/** A verifier with the secrets turned into keys once, for the hot path. */
export function createHmacSha256Verifier(
  secrets: readonly string[],
): (body: string | Uint8Array, signature: string) => SignatureCheck {
  const keys: KeyObject[] = secrets.map((secret) => createSecretKey(Buffer.from(secret, 'utf8')));
  return (body, signature) => {
    const received = parseSignature(signature);
    if (received === undefined) return signatureMalformed;
    // Every secret is tried even after a match would be found, so the time taken does not
    // reveal which position matched.
    let secretIndex = -1;
    keys.forEach((key, index) => {
      const expected = createHmac('sha256', key).update(body).digest();
      if (timingSafeEqual(expected, received) && secretIndex === -1) secretIndex = index;
    });
    return secretIndex === -1 ? signatureMismatch : { ok: true, secretIndex };
  };
}

function parseSignature(value: string): Buffer | undefined {
  let hex = value.trim();
  if (hex.slice(0, PREFIX.length).toLowerCase() === PREFIX) hex = hex.slice(PREFIX.length);
  return HEX_DIGEST.test(hex) ? Buffer.from(hex, 'hex') : undefined;
}

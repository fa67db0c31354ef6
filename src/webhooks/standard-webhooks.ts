/**
 * The Standard Webhooks scheme (https://www.standardwebhooks.com): `webhook-id`,
 * `webhook-timestamp` and `webhook-signature` headers; the signed content is
 * `id.timestamp.body`; secrets are `whsec_<base64>`; the signature header is a space-separated
 * list of `v1,<base64>` entries, any of which may match.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { signatureMalformed, signatureMismatch, type SignatureCheck } from './signature-check.js';

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const TIMESTAMP = /^\d{1,15}$/;
const DIGEST_BYTES = 32;

export interface StandardWebhookMessage {
  /** The `webhook-id` header: unique per message, the same on every retry of it. */
  readonly id: string;
  /** The `webhook-timestamp` header: seconds since the Unix epoch. */
  readonly timestamp: string | number;
  readonly body: string | Uint8Array;
}

export interface StandardWebhookVerifyOptions {
  /** Milliseconds since the epoch; tests pass their own clock. Default: `Date.now()`. */
  readonly now?: number;
  /** How far the timestamp may lie in the past or the future. Default: 300. */
  readonly toleranceSeconds?: number;
}

/** Decodes a `whsec_<base64>` secret to its key bytes, or undefined if it is not of that form. */
export function decodeStandardWebhookSecret(secret: string): Buffer | undefined {
  if (!secret.startsWith(SECRET_PREFIX)) return undefined;
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!BASE64.test(encoded)) return undefined;
  const key = Buffer.from(encoded, 'base64');
  return key.length > 0 ? key : undefined;
}

/**
 * Signs a message: returns the `webhook-signature` header value `v1,<base64>`.
 *
 * @throws {TypeError} if the secret is not of the form `whsec_<base64>`.
 */
export function signStandardWebhook(message: StandardWebhookMessage, secret: string): string {
  const key = decodeStandardWebhookSecret(secret);
  if (key === undefined)
    throw new TypeError('A Standard Webhooks secret has the form whsec_<base64>');
  return `v1,${digest(key, message).toString('base64')}`;
}

/**
 * Checks a `webhook-signature` header value against every accepted secret, and the timestamp
 * against the tolerance in both directions. Secrets not of the form `whsec_<base64>` never match.
 */
export function verifyStandardWebhook(
  message: StandardWebhookMessage,
  signature: string,
  secrets: readonly string[],
  options: StandardWebhookVerifyOptions = {},
): SignatureCheck {
  const verify = createStandardWebhookVerifier(secrets, options.toleranceSeconds ?? 300);
  return verify(message, signature, options.now ?? Date.now());
}

/** A verifier with the secrets decoded once, for the hot path. */
export function createStandardWebhookVerifier(
  secrets: readonly string[],
  toleranceSeconds: number,
): (message: StandardWebhookMessage, signature: string, now: number) => SignatureCheck {
  const keys = secrets.map(decodeStandardWebhookSecret);
  return (message, signature, now) => {
    const timestamp = String(message.timestamp);
    if (!TIMESTAMP.test(timestamp)) return signatureMalformed;
    // Too old and too new are separate checks: a timestamp from the future is as suspect as a
    // replay from the past.
    const ageSeconds = Math.floor(now / 1000) - Number(timestamp);
    if (ageSeconds > toleranceSeconds) return { ok: false, reason: 'stale' };
    if (-ageSeconds > toleranceSeconds) return { ok: false, reason: 'future' };

    const candidates = parseSignatures(signature);
    if (candidates.length === 0) return signatureMalformed;
    let secretIndex = -1;
    keys.forEach((key, index) => {
      if (key === undefined) return;
      const expected = digest(key, { ...message, timestamp });
      const matched = candidates.some((candidate) => timingSafeEqual(expected, candidate));
      if (matched && secretIndex === -1) secretIndex = index;
    });
    return secretIndex === -1 ? signatureMismatch : { ok: true, secretIndex };
  };
}

/** The `v1` entries of the header, decoded; entries of other versions are skipped. */
function parseSignatures(header: string): Buffer[] {
  const signatures: Buffer[] = [];
  for (const entry of header.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma === -1 || entry.slice(0, comma) !== 'v1') continue;
    const encoded = entry.slice(comma + 1);
    if (!BASE64.test(encoded)) continue;
    const bytes = Buffer.from(encoded, 'base64');
    if (bytes.length === DIGEST_BYTES) signatures.push(bytes);
  }
  return signatures;
}

function digest(key: Buffer, { id, timestamp, body }: StandardWebhookMessage): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}

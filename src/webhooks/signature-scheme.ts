/**
 * The configured signature scheme, seen the same way whatever it is: which headers a request
 * must carry, and whether its signature holds. Framework-free: headers come through a lookup.
 */
import { createHmacSha256Verifier } from './hmac-sha256.js';
import type { SignatureCheck } from './signature-check.js';
import { createStandardWebhookVerifier } from './standard-webhooks.js';

export const SIGNATURE_SCHEMES = ['hmac-sha256', 'standard-webhooks'] as const;
export type SignatureSchemeName = (typeof SIGNATURE_SCHEMES)[number];

/** Returns a request header by its lowercase name, or undefined when it is absent or empty. */
export type HeaderLookup = (lowercaseName: string) => string | undefined;

export interface SignatureScheme {
  readonly name: SignatureSchemeName;
  /** Lowercase names of the headers this scheme reads, kept with a quarantined delivery. */
  readonly headers: readonly string[];
  /** The required headers that the request lacks, as a 400 answer names them. */
  missingHeaders(header: HeaderLookup): string[];
  verify(body: Uint8Array, header: HeaderLookup, now: number): SignatureCheck;
  /** The sender's own id for the delivery, where the scheme has one (Standard Webhooks). */
  deliveryId(header: HeaderLookup): string | undefined;
}

export interface SignatureSchemeOptions {
  readonly scheme: SignatureSchemeName;
  readonly secrets: readonly string[];
  /** The header that carries an `hmac-sha256` signature, e.g. `X-Ybug-Signature`. */
  readonly signatureHeader: string;
  readonly toleranceSeconds: number;
}

export function createSignatureScheme(options: SignatureSchemeOptions): SignatureScheme {
  return options.scheme === 'hmac-sha256'
    ? hmacSha256Scheme(options)
    : standardWebhooksScheme(options);
}

function hmacSha256Scheme({ secrets, signatureHeader }: SignatureSchemeOptions): SignatureScheme {
  const name = signatureHeader.toLowerCase();
  const verify = createHmacSha256Verifier(secrets);
  return {
    name: 'hmac-sha256',
    headers: [name],
    missingHeaders: (header) => (header(name) === undefined ? [signatureHeader] : []),
    verify: (body, header) => verify(body, header(name) ?? ''),
    deliveryId: () => undefined,
  };
}

const STANDARD_HEADERS = ['id', 'timestamp', 'signature'] as const;

function standardWebhooksScheme({
  secrets,
  toleranceSeconds,
}: SignatureSchemeOptions): SignatureScheme {
  const verify = createStandardWebhookVerifier(secrets, toleranceSeconds);
  // Svix sends the same headers under its own prefix; either is accepted.
  const read = (header: HeaderLookup, field: (typeof STANDARD_HEADERS)[number]) =>
    header(`webhook-${field}`) ?? header(`svix-${field}`);
  return {
    name: 'standard-webhooks',
    headers: STANDARD_HEADERS.flatMap((field) => [`webhook-${field}`, `svix-${field}`]),
    missingHeaders: (header) =>
      STANDARD_HEADERS.filter((field) => read(header, field) === undefined).map(
        (field) => `webhook-${field}`,
      ),
    verify: (body, header, now) =>
      verify(
        { id: read(header, 'id') ?? '', timestamp: read(header, 'timestamp') ?? '', body },
        read(header, 'signature') ?? '',
        now,
      ),
    deliveryId: (header) => read(header, 'id'),
  };
}

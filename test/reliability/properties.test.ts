/**
 * Scenario 9: property-based tests (fast-check) of signature parsing, both schemes, and the
 * payload reading. Whatever comes in, no exception escapes, and a body verifies only with a
 * signature made over that very body.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { interpretPayload } from '../../src/webhooks/delivery.js';
import { signHmacSha256, verifyHmacSha256 } from '../../src/webhooks/hmac-sha256.js';
import { createSignatureScheme, type HeaderLookup } from '../../src/webhooks/signature-scheme.js';
import { signStandardWebhook } from '../../src/webhooks/standard-webhooks.js';
import { finishScenario } from './harness/report-row.js';

const SECRET = 'property-secret';
const WHSEC = `whsec_${Buffer.from('property-standard-webhooks-key').toString('base64')}`;
const RUNS = 2_000;
const NOW = Date.parse('2026-11-22T12:00:00Z');
const receivedAt = new Date(NOW);
let checked = 0;

/** Runs a property and counts its generated cases for the report. */
function holds<T>(arbitrary: fc.Arbitrary<T>, predicate: (value: T) => void, runs = RUNS): void {
  fc.assert(fc.property(arbitrary, predicate), { numRuns: runs });
  checked += runs;
}

const bytes = fc.uint8Array({ maxLength: 512 });
const headerText = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
);
const lookup =
  (headers: Record<string, string | undefined>): HeaderLookup =>
  (name) =>
    headers[name];
const hmac = createSignatureScheme({
  scheme: 'hmac-sha256',
  secrets: [SECRET, 'older-secret'],
  signatureHeader: 'X-Ybug-Signature',
  toleranceSeconds: 300,
});
const standard = createSignatureScheme({
  scheme: 'standard-webhooks',
  secrets: [WHSEC],
  signatureHeader: 'X-Ybug-Signature',
  toleranceSeconds: 300,
});

afterAll(() => {
  finishScenario({
    scenario: '9. property-based: signatures and payloads',
    notes: `${checked} generated inputs over 8 properties; no exception, no body verified by another's signature`,
    output: '',
    answers: [],
    secrets: [],
  });
});

describe('hmac-sha256 signatures', () => {
  it('never throws on any header value, and accepts none it did not make', () => {
    holds(fc.tuple(bytes, headerText), ([body, signature]) => {
      const check = hmac.verify(body, lookup({ 'x-ybug-signature': signature }), NOW);
      expect(check.ok).toBe(false);
    });
  });

  it('verifies a body with its own signature, prefixed or not, in either case', () => {
    holds(fc.tuple(bytes, fc.boolean(), fc.boolean()), ([body, prefixed, upper]) => {
      let signature = signHmacSha256(body, SECRET).slice(prefixed ? 0 : 'sha256='.length);
      if (upper) signature = signature.replace(/[a-f]/g, (c) => c.toUpperCase());
      expect(verifyHmacSha256(body, signature, [SECRET])).toEqual({ ok: true, secretIndex: 0 });
    });
  });

  it('never verifies a body with the signature of another body', () => {
    holds(
      fc.tuple(bytes, bytes).filter(([a, b]) => !Buffer.from(a).equals(Buffer.from(b))),
      ([a, b]) => {
        expect(verifyHmacSha256(b, signHmacSha256(a, SECRET), [SECRET]).ok).toBe(false);
      },
    );
  });

  it('never verifies with another secret', () => {
    holds(fc.tuple(bytes, fc.string({ minLength: 1 })), ([body, other]) => {
      fc.pre(other !== SECRET && other !== 'older-secret');
      const check = hmac.verify(
        body,
        lookup({ 'x-ybug-signature': signHmacSha256(body, other) }),
        NOW,
      );
      expect(check.ok).toBe(false);
    });
  });
});

describe('Standard Webhooks signatures', () => {
  it('never throws on any id, timestamp or signature', () => {
    holds(
      fc.tuple(bytes, headerText, headerText, headerText),
      ([body, id, timestamp, signature]) => {
        const header = lookup({
          'webhook-id': id,
          'webhook-timestamp': timestamp,
          'webhook-signature': signature,
        });
        expect(standard.verify(body, header, NOW).ok).toBe(false);
      },
    );
  });

  it('verifies only the body, id and timestamp that were signed', () => {
    const message = fc.record({
      id: fc.string({ minLength: 1, maxLength: 40 }),
      offset: fc.integer({ min: -299, max: 299 }),
      body: bytes,
    });
    holds(
      fc.tuple(message, message),
      ([signedOne, sentOne]) => {
        const timestamp = String(Math.floor(NOW / 1000) + signedOne.offset);
        const signature = signStandardWebhook(
          { id: signedOne.id, timestamp, body: signedOne.body },
          WHSEC,
        );
        const sentTimestamp = String(Math.floor(NOW / 1000) + sentOne.offset);
        const same =
          signedOne.id === sentOne.id &&
          timestamp === sentTimestamp &&
          Buffer.from(signedOne.body).equals(Buffer.from(sentOne.body));
        const check = standard.verify(
          sentOne.body,
          lookup({
            'webhook-id': sentOne.id,
            'webhook-timestamp': sentTimestamp,
            'webhook-signature': signature,
          }),
          NOW,
        );
        expect(check.ok).toBe(same);
        const own = standard.verify(
          signedOne.body,
          lookup({
            'webhook-id': signedOne.id,
            'webhook-timestamp': timestamp,
            'webhook-signature': signature,
          }),
          NOW,
        );
        expect(own.ok).toBe(true);
      },
      1_000,
    );
  });
});

describe('payload reading', () => {
  it('never throws on any bytes', () => {
    holds(bytes, (body) => {
      expect(['delivery', 'ignored', 'invalid']).toContain(
        interpretPayload(body, { receivedAt }).kind,
      );
    });
  });

  it('never throws on any JSON, keyed prototype-safe, and keeps every record it accepts whole', () => {
    const json = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(
        fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', 'title', 'tags', 'rating'),
        fc.jsonValue(),
      ),
      fc.record(
        { id: fc.string({ minLength: 1 }), rating: fc.double(), tags: fc.array(fc.jsonValue()) },
        { requiredKeys: ['id'] },
      ),
    );
    holds(json, (value) => {
      const outcome = interpretPayload(Buffer.from(JSON.stringify(value) ?? 'null'), {
        receivedAt,
      });
      if (outcome.kind === 'delivery') {
        const { record, key } = outcome.delivery;
        expect(key).toBe(`feedback.created:${record.id}`);
        expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
        expect(({} as Record<string, unknown>).id).toBeUndefined(); // nothing polluted
      }
    });
  });
});

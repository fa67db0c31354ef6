/**
 * A failure's cause: what stays of its reason once the values that differ from one record to the
 * next are taken out. Failures with one cause make one group in the dead letter.
 */
import { describe, expect, it } from 'vitest';
import { failureCause } from '../../../src/runs/failure-cause.js';

describe('a failure’s cause', () => {
  it.each([
    [
      'a record number',
      'the API answered 404 for feedback 123',
      'the API answered 404 for feedback …',
    ],
    ['a record id', 'no such record fb_9k2x1 in the project', 'no such record … in the project'],
    ['a uuid', 'job 0b8f1c2e-55aa-4e3b-9d0c-3f1e2a4b5c6d expired', 'job … expired'],
    ['a hex id', 'trace 4bf92f3577b34da6a3ce929d0e0e4736 lost', 'trace … lost'],
    ['a hex id without a digit', 'object deadbeefcafe is gone', 'object … is gone'],
    [
      'a double-quoted value',
      'unknown tag "checkout" on the record',
      'unknown tag "…" on the record',
    ],
    ['a single-quoted value', "field 'priority' is locked", "field '…' is locked"],
    ['a curly-quoted value', 'the team “Payments” is archived', 'the team “…” is archived'],
    ['a duration', 'no answer within 10000 ms.', 'no answer within … ms.'],
    [
      'a URL’s record ids, query and fragment',
      'rate limiting (429 on PATCH https://api.example.com/v1/projects/p_1/feedbacks/fb_2?page=3); see https://example.com/v1/a_1#part.',
      'rate limiting (429 on PATCH https://api.example.com/v1/projects/…/feedbacks/…?…); see https://example.com/v1/…#….',
    ],
  ])('takes out %s', (_what, reason, cause) => {
    expect(failureCause(reason)).toBe(cause);
  });

  it('is the same for failures that differ only in their values', () => {
    expect(failureCause('the API answered 404 for feedback 123')).toBe(
      failureCause('the API answered 404 for feedback 456'),
    );
    expect(
      failureCause(
        'The feedback API found nothing at PATCH https://api.example.com/v1/projects/prj_shop/feedbacks/fb_123 (404).',
      ),
    ).toBe(
      'The feedback API found nothing at PATCH https://api.example.com/v1/projects/…/feedbacks/… (404).',
    );
  });

  it('keeps an HTTP status, so a 404 and a 500 are two causes', () => {
    expect(failureCause('The feedback API failed on GET https://api.example.com/v1/x (500).')).toBe(
      'The feedback API failed on GET https://api.example.com/v1/x (500).',
    );
    expect(failureCause('the API answered 404 for feedback 500')).not.toBe(
      failureCause('the API answered 500 for feedback 404'),
    );
  });

  it('keeps the names of kinds of things that end in a number', () => {
    expect(failureCause('invalid base64 in the screenshot')).toBe(
      'invalid base64 in the screenshot',
    );
    expect(failureCause('invalid utf8 in the screenshot')).not.toBe(
      failureCause('invalid base64 in the screenshot'),
    );
    expect(failureCause('sha256 of S3 object 8812 differs')).toBe('sha256 of S3 object … differs');
  });

  it('keeps apostrophes, and the words around the values', () => {
    expect(failureCause("the token's user cannot see project 12")).toBe(
      "the token's user cannot see project …",
    );
  });

  it('is its own cause, so a cause given back selects the same failures', () => {
    const reasons = [
      'the API answered 404 for feedback 123',
      'unknown tag "checkout" on record fb_1 (422): {"error":"bad"}',
      'Cannot reach https://127.0.0.1:4010/v1/feedbacks/9?x=1: connect ECONNREFUSED 127.0.0.1:4010',
      'see https://example.com/v1/a_1#part and https://example.com/v1/b?q="x".',
    ];
    for (const reason of reasons) {
      expect(failureCause(failureCause(reason))).toBe(failureCause(reason));
    }
  });
});

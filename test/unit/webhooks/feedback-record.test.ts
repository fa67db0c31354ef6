import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FeedbackRecordSchema } from '../../../src/webhooks/feedback-record.js';

const fullRecord = JSON.parse(
  readFileSync(new URL('../../fixtures/feedback-record.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

describe('FeedbackRecordSchema', () => {
  it('accepts a record with every field of the spec', () => {
    expect(FeedbackRecordSchema.parse(fullRecord)).toEqual(fullRecord);
  });

  it('requires only the id', () => {
    expect(FeedbackRecordSchema.parse({ id: 'fb_1' })).toEqual({ id: 'fb_1' });
    expect(FeedbackRecordSchema.safeParse({ title: 'no id' }).success).toBe(false);
    expect(FeedbackRecordSchema.safeParse({ id: '' }).success).toBe(false);
  });

  it('allows null in every other field', () => {
    const nulls = Object.fromEntries(Object.keys(fullRecord).map((key) => [key, null]));
    expect(FeedbackRecordSchema.safeParse({ ...nulls, id: 'fb_1' }).success).toBe(true);
  });

  it('keeps fields the spec does not list', () => {
    const record = { id: 'fb_1', sentiment: 'angry', client_context: { gpu: 'M3' } };
    expect(FeedbackRecordSchema.parse(record)).toEqual(record);
  });

  it('accepts strings and numbers in user_data, nothing else', () => {
    expect(FeedbackRecordSchema.safeParse({ id: 'a', user_data: { n: 1, s: 'x' } }).success).toBe(
      true,
    );
    expect(FeedbackRecordSchema.safeParse({ id: 'a', user_data: { o: {} } }).success).toBe(false);
  });

  it.each([
    ['feedback_id', 1.5],
    ['rating', '5'],
    ['tags', [{ id: 1 }]],
    ['custom_fields', [{ value: 3 }]],
    ['client_context', { screen_width: 'wide' }],
    ['client_context', { geo: { country_code: 49 } }],
    ['assignee', { id: 17 }],
    ['reporter', { email: 5 }],
  ])('refuses a wrong type in %s', (field, value) => {
    expect(FeedbackRecordSchema.safeParse({ id: 'a', [field]: value }).success).toBe(false);
  });

  it('does not let a __proto__ key reach the prototype', () => {
    const parsed = FeedbackRecordSchema.parse(
      JSON.parse('{"id":"a","__proto__":{"polluted":true},"user_data":{"__proto__":"x"}}'),
    );
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

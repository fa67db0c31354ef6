import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { FeedbackRecord } from '../../../../src/webhooks/feedback-record.js';
import { MATCHED_PREFIX_CHARS, meets } from '../../../../src/worker/triage/conditions.js';
import { fieldValues } from '../../../../src/worker/triage/field-values.js';
import type { Condition } from '../../../../src/worker/triage/rules.js';

const record = JSON.parse(
  readFileSync(new URL('../../../fixtures/feedback-record.json', import.meta.url), 'utf8'),
) as FeedbackRecord;

describe('fieldValues', () => {
  it.each([
    ['rating', [2]],
    ['title', ['Checkout button does nothing on Safari']],
    ['client_context.geo.country_code', ['DE']],
    ['client_context.device_type', ['desktop']],
    ['tags[].name', ['checkout', 'safari']],
    ['custom_fields.Order number', ['A-99812']],
    ['user_data.plan', ['pro']],
    ['user_data.account_age_days', [412]],
    ['console_log_url', ['https://cdn.example.com/logs/fb_8xK2pQ.json']],
    ['missing', []],
    ['user_data.missing', []],
    ['custom_fields.Missing', []],
    ['client_context.geo.nope', []],
  ])('reads %s', (path, values) => {
    expect(fieldValues(record, path)).toEqual(values);
  });

  it('does not read inherited properties', () => {
    expect(fieldValues(record, 'constructor')).toEqual([]);
    expect(fieldValues(record, 'user_data.toString')).toEqual([]);
  });
});

describe('meets', () => {
  it.each<[string, Condition, boolean]>([
    ['equals', { field: 'type', equals: 'Bug' }, true],
    ['equals, other value', { field: 'type', equals: 'Idea' }, false],
    ['in', { field: 'client_context.geo.country_code', in: ['AT', 'DE', 'CH'] }, true],
    ['in, over an array field', { field: 'tags[].name', in: ['payment', 'safari'] }, true],
    ['in, no element', { field: 'tags[].name', in: ['billing'] }, false],
    ['matches', { field: 'title', matches: '^Checkout' }, true],
    ['matches is case-sensitive by default', { field: 'title', matches: 'safari' }, false],
    ['matches with ignoreCase', { field: 'title', matches: 'safari', ignoreCase: true }, true],
    ['matches only strings', { field: 'rating', matches: '2' }, false],
    ['exists', { field: 'console_log_url', exists: true }, true],
    ['exists false on a missing field', { field: 'video_ur', exists: false }, true],
    ['exists false on a present field', { field: 'video_url', exists: false }, false],
    ['lt', { field: 'rating', lt: 3 }, true],
    ['lte', { field: 'rating', lte: 2 }, true],
    ['gt', { field: 'net_promoter_score', gt: 3 }, false],
    ['gte', { field: 'net_promoter_score', gte: 3 }, true],
    ['a range: every operator must hold', { field: 'rating', gte: 1, lte: 1 }, false],
    ['compares numbers only', { field: 'title', lt: 5 }, false],
    ['user_data by key', { field: 'user_data.plan', equals: 'pro' }, true],
    ['custom field by name', { field: 'custom_fields.Order number', matches: '^A-' }, true],
    [
      'all',
      {
        all: [
          { field: 'rating', lte: 2 },
          { field: 'type_id', equals: 1 },
        ],
      },
      true,
    ],
    [
      'all, one fails',
      {
        all: [
          { field: 'rating', lte: 2 },
          { field: 'type_id', equals: 2 },
        ],
      },
      false,
    ],
    [
      'any',
      {
        any: [
          { field: 'rating', gte: 4 },
          { field: 'source_type', equals: 'widget' },
        ],
      },
      true,
    ],
    ['not', { not: { field: 'rating', lte: 2 } }, false],
  ])('%s', (_name, condition, expected) => {
    expect(meets(record, condition)).toBe(expected);
  });

  it('treats null like a missing value', () => {
    expect(meets({ id: 'a', title: null }, { field: 'title', exists: true })).toBe(false);
    expect(meets({ id: 'a', title: null }, { field: 'title', equals: null })).toBe(true);
  });
});

describe('a regular expression on long text', () => {
  it('is tested against the first MATCHED_PREFIX_CHARS characters only', () => {
    const condition: Condition = { field: 'title', matches: 'needle' };
    const early = `${'a'.repeat(MATCHED_PREFIX_CHARS - 'needle'.length)}needle`;
    const late = `${'a'.repeat(MATCHED_PREFIX_CHARS)}needle`;
    expect(meets({ id: 'a', title: early }, condition)).toBe(true);
    expect(meets({ id: 'a', title: late }, condition)).toBe(false);
  });
});

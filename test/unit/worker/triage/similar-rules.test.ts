import { describe, expect, it } from 'vitest';
import type { SimilarFacts, SimilarWindow } from '../../../../src/similar/similar-facts.js';
import { meets, similarWindowsOf } from '../../../../src/worker/triage/conditions.js';
import { parseDuration } from '../../../../src/worker/triage/duration.js';
import {
  parseTriageRules,
  TriageRulesError,
  type Condition,
} from '../../../../src/worker/triage/rules.js';
import { createTriageHandler, decideTriage } from '../../../../src/worker/triage/triage-handler.js';

const HOUR = 3_600_000;

function problems(rules: unknown): string {
  try {
    parseTriageRules(JSON.stringify(rules), 'rules.json');
  } catch (error) {
    expect(error).toBeInstanceOf(TriageRulesError);
    return (error as Error).message;
  }
  throw new Error('expected the rules to be refused');
}

const parse = (rules: unknown[], mode: 'first' | 'all' = 'first') =>
  parseTriageRules(JSON.stringify({ mode, rules }), 'rules.json');

const incident = {
  name: 'incident',
  when: { similar: { atLeast: 5, within: '1h' } },
  target: 'first',
  set: { priority_id: 1 },
  notify: { urlFrom: 'SLACK_WEBHOOK_URL' },
};

function facts(crossed: readonly SimilarWindow[], first = 'fb_first', size = 5): SimilarFacts {
  return {
    group: { id: 'feedback.created:fb_first', size, first: { key: 'k', recordId: first } },
    matches: [],
    crossed,
  };
}

describe('durations', () => {
  it.each([
    ['30s', 30_000],
    ['10m', 600_000],
    ['1h', HOUR],
    ['7d', 7 * 24 * HOUR],
    ['30d', 30 * 24 * HOUR],
  ])('reads %s', (text, ms) => {
    expect(parseDuration(text)).toEqual({ ms });
  });

  it.each(['', '1', 'h', '1.5h', '-1h', '0s', '1w', '1 h', '31d', '99999999d'])(
    'refuses %j',
    (text) => {
      expect(parseDuration(text)).toHaveProperty('problem');
    },
  );
});

describe('the similar condition in a rules file', () => {
  it('reads atLeast and within as a window in milliseconds', () => {
    const rules = parse([incident]);
    expect(rules.rules[0]?.when).toEqual({ similar: { atLeast: 5, withinMs: HOUR } });
    expect(rules.rules[0]?.target).toBe('first');
    expect(rules.rules[0]?.notify).toEqual({ urlFrom: 'SLACK_WEBHOOK_URL' });
  });

  it('defaults the target to this record', () => {
    const rules = parse([
      { name: 'r', when: { field: 'rating', lte: 2 }, set: { priority_id: 3 } },
    ]);
    expect(rules.rules[0]?.target).toBe('this');
  });

  it.each([
    [
      { atLeast: 5, within: '1 hour' },
      /rules\[0\]\.when\.similar\.within: expected a duration such as 30s/,
    ],
    [{ atLeast: 5, within: '90d' }, /within: expected a duration of at most 30d/],
    [{ atLeast: 0, within: '1h' }, /when\.similar\.atLeast: expected at least 1/],
    [{ atLeast: 2.5, within: '1h' }, /atLeast: expected a whole number/],
    [{ atLeast: 100_000, within: '1h' }, /atLeast: expected at most 10000/],
    [{ atLeast: 5 }, /when\.similar\.within/],
    [{ atLeast: 5, within: '1h', over: 'x' }, /when\.similar/],
  ])('refuses %j with where and why', (similar, message) => {
    expect(
      problems({ rules: [{ name: 'r', when: { similar }, set: { priority_id: 1 } }] }),
    ).toMatch(message);
  });

  it('finds a similar condition inside all, any and not', () => {
    const rules = parse([
      {
        name: 'r',
        when: {
          all: [{ field: 'rating', lte: 2 }, { not: { similar: { atLeast: 3, within: '10m' } } }],
        },
        set: { priority_id: 1 },
      },
    ]);
    expect(similarWindowsOf([rules.rules[0]!.when])).toEqual([{ atLeast: 3, withinMs: 600_000 }]);
  });

  it('refuses a target other than this or first, and a rule that neither sets nor notifies', () => {
    expect(problems({ rules: [{ ...incident, target: 'group' }] })).toMatch(/rules\[0\]\.target/);
    expect(problems({ rules: [{ name: 'r', when: { field: 'rating', lte: 2 } }] })).toMatch(
      /a rule needs "set", "notify" or both/,
    );
  });

  it('refuses a notify that holds a URL instead of naming a variable, without repeating it', () => {
    const url = 'https://hooks.slack.com/services/T000/B000/XXXXsecret';
    const message = problems({ rules: [{ ...incident, notify: { urlFrom: url } }] });
    expect(message).toMatch(/notify\.urlFrom: expected the name of an environment variable/);
    expect(message).not.toContain('XXXXsecret');
  });
});

describe('the similar condition', () => {
  const condition: Condition = { similar: { atLeast: 5, withinMs: HOUR } };
  const record = { id: 'fb_5' };

  it('holds when the delivery crossed its window', () => {
    expect(meets(record, condition, facts([{ atLeast: 5, withinMs: HOUR }]))).toBe(true);
  });

  it('does not hold when the delivery crossed another window, or none', () => {
    expect(meets(record, condition, facts([{ atLeast: 5, withinMs: 600_000 }]))).toBe(false);
    expect(meets(record, condition, facts([{ atLeast: 6, withinMs: HOUR }]))).toBe(false);
    expect(meets(record, condition, facts([]))).toBe(false);
  });

  it('does not hold without grouping', () => {
    expect(meets(record, condition)).toBe(false);
    expect(meets(record, { not: condition })).toBe(true);
  });
});

describe('deciding with groups', () => {
  const crossed = facts([{ atLeast: 5, withinMs: HOUR }]);
  const record = { id: 'fb_5', priority_id: 3 };

  it("sends the first record's PATCH, all its fields, and this record's apart", () => {
    const rules = parse(
      [
        { ...incident, notify: undefined },
        { name: 'dup', when: { similar: { atLeast: 5, within: '1h' } }, set: { status_id: 9 } },
      ],
      'all',
    );
    expect(decideTriage(rules, record, crossed)).toEqual({
      matched: ['incident', 'dup'],
      patch: { status_id: 9 },
      first: { recordId: 'fb_first', patch: { priority_id: 1 } },
    });
  });

  it('sends a "first" PATCH to this record when it is the first', () => {
    const rules = parse([{ ...incident, notify: undefined }]);
    expect(decideTriage(rules, record, facts(crossed.crossed, 'fb_5'))).toEqual({
      matched: ['incident'],
      patch: { priority_id: 1 },
    });
  });

  it('does not apply a "first" PATCH without grouping, and says so', () => {
    const rules = parse([
      {
        name: 'r',
        when: { field: 'priority_id', equals: 3 },
        target: 'first',
        set: { type_id: 1 },
      },
    ]);
    expect(decideTriage(rules, record)).toEqual({ matched: ['r'], patch: {}, noGroup: ['r'] });
  });

  it('lists the notifies of the rules that matched, by variable', () => {
    const rules = parse([incident]);
    expect(decideTriage(rules, record, crossed).notify).toEqual([
      { rule: 'incident', urlFrom: 'SLACK_WEBHOOK_URL' },
    ]);
    expect(decideTriage(rules, record, facts([])).matched).toEqual([]);
  });
});

describe('the triage handler', () => {
  it('declares the distinct windows of its rules', () => {
    const rules = parse([
      { ...incident, notify: undefined },
      {
        name: 'again',
        when: { any: [{ similar: { atLeast: 5, within: '60m' } }] },
        set: { status_id: 2 },
      },
      { name: 'big', when: { similar: { atLeast: 50, within: '1d' } }, set: { status_id: 3 } },
    ]);
    expect(createTriageHandler({ rules }).similarWindows).toEqual([
      { atLeast: 5, withinMs: HOUR },
      { atLeast: 50, withinMs: 24 * HOUR },
    ]);
  });

  it('refuses to start when a notify names a variable that is not set, naming it', () => {
    const rules = parse([incident]);
    expect(() => createTriageHandler({ rules, readVariable: () => undefined })).toThrow(
      /rule "incident" notifies the URL in SLACK_WEBHOOK_URL, which is not set/,
    );
  });

  it('refuses a variable that holds no http(s) URL, without repeating what it holds', () => {
    const rules = parse([incident]);
    const start = () =>
      createTriageHandler({ rules, readVariable: () => 'ftp://hooks.example.com/s3cr3t' });
    expect(start).toThrow(/SLACK_WEBHOOK_URL, which does not hold an http:\/\/ or https:\/\/ URL/);
    expect(start).not.toThrow(/s3cr3t/);
  });
});

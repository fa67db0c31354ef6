import { describe, expect, it } from 'vitest';
import {
  loadTriageRules,
  parseTriageRules,
  TriageRulesError,
} from '../../../../src/worker/triage/rules.js';
import { parseJsonc } from '../../../../src/worker/triage/jsonc.js';

const EXAMPLE = new URL('../../../../examples/triage-rules.jsonc', import.meta.url);

function problems(rules: unknown): string {
  try {
    parseTriageRules(JSON.stringify(rules), 'rules.json');
  } catch (error) {
    expect(error).toBeInstanceOf(TriageRulesError);
    return (error as Error).message;
  }
  throw new Error('expected the rules to be refused');
}

const rule = (when: unknown, set: unknown = { priority_id: 3 }) => ({
  rules: [{ name: 'r', when, set }],
});

describe('triage rules files', () => {
  it('loads the commented example file', () => {
    const rules = loadTriageRules(EXAMPLE.pathname);
    expect(rules.mode).toBe('first');
    expect(rules.rules.map((entry) => entry.name)).toContain('crash-reports-are-urgent');
  });

  it('defaults to first-match mode', () => {
    expect(parseTriageRules(JSON.stringify(rule({ field: 'rating', lte: 2 })), 'x').mode).toBe(
      'first',
    );
  });

  it.each([
    [rule({ field: 'rating', lte: 'two' }), /rules\[0\]\.when\.lte: .*number/],
    [rule({ all: [{ field: 'title' }] }), /rules\[0\]\.when\.all\[0\]: a field test needs/],
    [
      rule({ any: [{ field: 'title', matches: '(' }] }),
      /when\.any\[0\]\.matches: expected a valid regular expression/,
    ],
    [rule({ not: { feld: 'title' } }), /rules\[0\]\.when\.not: expected a condition/],
    [rule({ field: 'rating', lte: 2 }, { priority: 3 }), /rules\[0\]\.set: Unrecognized key/],
    [rule({ field: 'rating', lte: 2 }, {}), /rules\[0\]\.set: set needs at least one field/],
    [rule({ field: 'rating', lte: 2 }, { status_id: 'open' }), /rules\[0\]\.set\.status_id/],
    [{ rules: [] }, /rules: /],
    [{ mode: 'some', rules: rule({ field: 'a', exists: true }).rules }, /mode: /],
    [
      {
        rules: [
          ...rule({ field: 'a', exists: true }).rules,
          ...rule({ field: 'b', exists: true }).rules,
        ],
      },
      /rules\[1\]\.name: rule name "r" is used twice/,
    ],
  ])('points at the problem in %j', (rules, message) => {
    expect(problems(rules)).toMatch(message);
  });

  it('names the file that is not JSON', () => {
    expect(() => parseTriageRules('{ "rules": [ }', 'broken.json')).toThrow(
      /TRIAGE_RULES broken.json: not JSON/,
    );
  });

  it('names the file it cannot read', () => {
    expect(() => loadTriageRules('/nowhere/rules.json')).toThrow(
      /cannot read \/nowhere\/rules.json/,
    );
  });
});

describe('parseJsonc', () => {
  it('removes line and block comments but not comment-like text in strings', () => {
    const text = `{
      // a comment
      "url": "https://example.com/*not a comment*/", /* block */ "n": 1
    }`;
    expect(parseJsonc(text).value).toEqual({
      url: 'https://example.com/*not a comment*/',
      n: 1,
    });
  });

  it('keeps escaped quotes inside strings', () => {
    expect(parseJsonc('{"a": "say \\"hi\\" // not a comment"}').value).toEqual({
      a: 'say "hi" // not a comment',
    });
  });

  it('drops trailing commas, even before a comment, but not commas in strings', () => {
    expect(parseJsonc('{"a": [1, 2,], "b": ",]", /* x */ "c": {"d": 1, // y\n},}').value).toEqual({
      a: [1, 2],
      b: ',]',
      c: { d: 1 },
    });
  });

  it('names the line and column of a syntax error', () => {
    expect(() => parseJsonc('{\n  "a": 1,\n  "b" 2\n}')).toThrow(/^3:7 colon expected/);
  });

  it('says where a value sits, or its nearest parent', () => {
    const document = parseJsonc('{\n  "rules": [\n    {"name": "x"}\n  ]\n}');
    expect(document.positionOf(['rules', 0, 'name'])).toBe('3:14');
    expect(document.positionOf(['rules', 0, 'when'])).toBe('3:5');
  });
});

describe('parseTriageRules', () => {
  it('names the line and column as well as the JSON path of a problem', () => {
    const text =
      '{\n  "rules": [\n    {"name": "x", "when": {"field": "rating", "gte": "high"}, "set": {"priority_id": 1}}\n  ]\n}';
    expect(() => parseTriageRules(text, 'rules.jsonc')).toThrow(/\n {2}3:\d+ rules\[0\]\.when/);
  });
});

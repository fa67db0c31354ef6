/**
 * Whether a record meets a rule's condition. A field test holds if any value of the field passes.
 * A regular expression is tested against the first MATCHED_PREFIX_CHARS characters of a value
 * only: a visitor's text can be up to BODY_LIMIT long, and a rule's pattern is the operator's,
 * so its cost per record is bounded whatever the visitor sent.
 */
import type { FeedbackRecord } from '../../webhooks/feedback-record.js';
import { fieldValues } from './field-values.js';
import type { Condition, FieldTest } from './rules.js';

export function meets(record: FeedbackRecord, condition: Condition): boolean {
  if ('all' in condition) return condition.all.every((inner) => meets(record, inner));
  if ('any' in condition) return condition.any.some((inner) => meets(record, inner));
  if ('not' in condition) return !meets(record, condition.not);
  return passes(fieldValues(record, condition.field), condition);
}

function passes(values: unknown[], test: FieldTest): boolean {
  const present = values.filter((value) => value !== undefined && value !== null);
  if (test.exists !== undefined && test.exists !== present.length > 0) return false;
  const valueTests = valueTestsOf(test);
  if (valueTests.length === 0) return true;
  return values.some((value) => valueTests.every((check) => check(value)));
}

/** How much of a string value a rule's `matches` reads. */
export const MATCHED_PREFIX_CHARS = 10_000;

type ValueTest = (value: unknown) => boolean;

/**
 * Compiles every field test of a condition (its regular expressions among them), once, when the
 * rules are loaded: records then only run them.
 */
export function compileCondition(condition: Condition): void {
  if ('all' in condition) return condition.all.forEach(compileCondition);
  if ('any' in condition) return condition.any.forEach(compileCondition);
  if ('not' in condition) return compileCondition(condition.not);
  valueTestsOf(condition);
}

// Compiled once per test object (by compileCondition, when the rules are loaded) and kept, so a
// rule's regular expression is not rebuilt for every record.
const compiled = new WeakMap<FieldTest, ValueTest[]>();

function valueTestsOf(test: FieldTest): ValueTest[] {
  let tests = compiled.get(test);
  if (tests) return tests;
  tests = [];
  const { equals, lt, lte, gt, gte } = test;
  if (equals !== undefined) tests.push((value) => value === equals);
  if (test.in !== undefined) {
    const allowed = test.in;
    tests.push((value) => allowed.includes(value as string));
  }
  if (test.matches !== undefined) {
    const pattern = new RegExp(test.matches, test.ignoreCase ? 'i' : '');
    tests.push(
      (value) =>
        typeof value === 'string' &&
        pattern.test(
          value.length > MATCHED_PREFIX_CHARS ? value.slice(0, MATCHED_PREFIX_CHARS) : value,
        ),
    );
  }
  const isNumber = (value: unknown): value is number => typeof value === 'number';
  if (lt !== undefined) tests.push((value) => isNumber(value) && value < lt);
  if (lte !== undefined) tests.push((value) => isNumber(value) && value <= lte);
  if (gt !== undefined) tests.push((value) => isNumber(value) && value > gt);
  if (gte !== undefined) tests.push((value) => isNumber(value) && value >= gte);
  compiled.set(test, tests);
  return tests;
}

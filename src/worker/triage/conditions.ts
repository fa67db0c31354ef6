/**
 * Whether a record meets a rule's condition. A field test holds if any value of the field passes.
 * A group-size test reads only what grouping told the delivery (`similar.crossed`), so it holds
 * for exactly the one delivery whose arrival crossed its window, and never without grouping.
 * A regular expression is tested against the first MATCHED_PREFIX_CHARS characters of a value
 * only: a visitor's text can be up to BODY_LIMIT long, and a rule's pattern is the operator's,
 * so its cost per record is bounded whatever the visitor sent.
 */
import type { SimilarFacts, SimilarWindow } from '../../similar/similar-facts.js';
import type { FeedbackRecord } from '../../webhooks/feedback-record.js';
import { fieldValues } from './field-values.js';
import type { Condition, FieldTest } from './rules.js';

/** `similar`: what grouping told this delivery; undefined when grouping is off. */
export function meets(
  record: FeedbackRecord,
  condition: Condition,
  similar?: SimilarFacts,
): boolean {
  if ('field' in condition) return passes(fieldValues(record, condition.field), condition);
  if ('all' in condition) return condition.all.every((inner) => meets(record, inner, similar));
  if ('any' in condition) return condition.any.some((inner) => meets(record, inner, similar));
  if ('not' in condition) return !meets(record, condition.not, similar);
  return crossed(similar, condition.similar);
}

function crossed(similar: SimilarFacts | undefined, window: SimilarWindow): boolean {
  return (
    similar?.crossed.some(
      (each) => each.atLeast === window.atLeast && each.withinMs === window.withinMs,
    ) ?? false
  );
}

/**
 * The distinct group-size windows the conditions test, for the handler to declare: grouping
 * decides crossings for the windows declared, and only those.
 */
export function similarWindowsOf(conditions: readonly Condition[]): SimilarWindow[] {
  const windows = new Map<string, SimilarWindow>();
  const visit = (condition: Condition): void => {
    if ('field' in condition) return;
    if ('all' in condition) return condition.all.forEach(visit);
    if ('any' in condition) return condition.any.forEach(visit);
    if ('not' in condition) return visit(condition.not);
    const { atLeast, withinMs } = condition.similar;
    windows.set(`${atLeast}/${withinMs}`, { atLeast, withinMs });
  };
  conditions.forEach(visit);
  return [...windows.values()];
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
  if ('similar' in condition) return;
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

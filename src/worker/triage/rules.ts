/**
 * The rules file of auto-triage (TRIAGE_RULES): which records get which PATCH, and which
 * matches are told to a chat. Validated in full at start; a problem stops the worker with the
 * JSON path where it is.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { FeedbackPatch } from '../../api/resources.js';
import type { SimilarWindow } from '../../similar/similar-facts.js';
import { compileCondition } from './conditions.js';
import { parseDuration } from './duration.js';
import { parseJsonc, type JsoncDocument } from './jsonc.js';

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** A test of one field. Several operators in one test must all hold. */
export interface FieldTest {
  readonly field: string;
  readonly equals?: string | number | boolean | null;
  readonly in?: readonly (string | number | boolean | null)[];
  /** A regular expression, tested against string values. */
  readonly matches?: string;
  /** With `matches`: ignore case. */
  readonly ignoreCase?: boolean;
  /** true: the field has a value (not null); false: it has none. */
  readonly exists?: boolean;
  readonly lt?: number;
  readonly lte?: number;
  readonly gt?: number;
  readonly gte?: number;
}

/**
 * Holds for the one delivery of a group whose arrival makes the group reach `atLeast`
 * deliveries within `withinMs` (`similar.crossed` holds the window); false without grouping.
 */
export interface SimilarTest {
  readonly similar: SimilarWindow;
}

export type Condition =
  | FieldTest
  | SimilarTest
  | { readonly all: readonly Condition[] }
  | { readonly any: readonly Condition[] }
  | { readonly not: Condition };

const OPERATORS = ['equals', 'in', 'matches', 'exists', 'lt', 'lte', 'gt', 'gte'] as const;

const FieldTestSchema = z
  .strictObject({
    field: z.string().min(1),
    equals: scalar.optional(),
    in: z.array(scalar).optional(),
    matches: z.string().refine(isRegExp, 'expected a valid regular expression').optional(),
    ignoreCase: z.boolean().optional(),
    exists: z.boolean().optional(),
    lt: z.number().optional(),
    lte: z.number().optional(),
    gt: z.number().optional(),
    gte: z.number().optional(),
  })
  .refine((test) => OPERATORS.some((operator) => test[operator] !== undefined), {
    message: `a field test needs at least one of ${OPERATORS.join(', ')}`,
  });

// A condition is told apart by its keys, so an error points into the branch that was meant
// instead of listing every branch of a union.
const ConditionSchema: z.ZodType<Condition> = z.lazy(() =>
  z.unknown().transform((value, context) => {
    const schema = branchOf(value);
    if (schema === undefined) {
      context.addIssue({
        code: 'custom',
        message:
          'expected a condition: {"field": ..., <operator>: ...}, {"similar": {...}}, {"all": [...]}, {"any": [...]} or {"not": {...}}',
      });
      return z.NEVER;
    }
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data as Condition;
    for (const issue of parsed.error.issues) {
      context.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    }
    return z.NEVER;
  }),
);

/** The most deliveries a group-size condition can wait for. */
export const MAX_SIMILAR_AT_LEAST = 10_000;

const SimilarTestSchema = z
  .strictObject({
    similar: z.strictObject({
      atLeast: z
        .number()
        .int('expected a whole number')
        .min(1, 'expected at least 1')
        .max(MAX_SIMILAR_AT_LEAST, `expected at most ${MAX_SIMILAR_AT_LEAST}`),
      within: z.string().transform((text, context) => {
        const parsed = parseDuration(text);
        if ('ms' in parsed) return parsed.ms;
        context.addIssue({ code: 'custom', message: parsed.problem });
        return z.NEVER;
      }),
    }),
  })
  .transform(({ similar }): SimilarTest => ({
    similar: { atLeast: similar.atLeast, withinMs: similar.within },
  }));

function branchOf(value: unknown): z.ZodType | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  if ('all' in value) return z.strictObject({ all: z.array(ConditionSchema).min(1) });
  if ('any' in value) return z.strictObject({ any: z.array(ConditionSchema).min(1) });
  if ('not' in value) return z.strictObject({ not: ConditionSchema });
  if ('field' in value) return FieldTestSchema;
  if ('similar' in value) return SimilarTestSchema;
  return undefined;
}

const PatchSchema = z
  .strictObject({
    status_id: z.number().int().optional(),
    priority_id: z.number().int().optional(),
    type_id: z.number().int().optional(),
    assignee_id: z.string().min(1).optional(),
    title: z.string().optional(),
    description: z.string().optional(),
  })
  .refine((patch) => Object.keys(patch).length > 0, { message: 'set needs at least one field' });

/** Which record a rule's `set` PATCHes. */
export const RULE_TARGETS = ['this', 'first'] as const;
export type RuleTarget = (typeof RULE_TARGETS)[number];

const NotifySchema = z.strictObject({
  // The variable's name only: the URL is a secret and never sits in a file that is shared.
  urlFrom: z
    .string()
    .regex(
      /^[A-Za-z_][A-Za-z0-9_]{0,127}$/,
      'expected the name of an environment variable that holds the URL, e.g. SLACK_WEBHOOK_URL',
    ),
});

const RuleSchema = z
  .strictObject({
    name: z.string().min(1),
    description: z.string().optional(),
    when: ConditionSchema,
    target: z.enum(RULE_TARGETS).default('this'),
    set: PatchSchema.optional(),
    notify: NotifySchema.optional(),
  })
  .refine((rule) => rule.set !== undefined || rule.notify !== undefined, {
    message: 'a rule needs "set", "notify" or both',
  });

export const TriageRulesSchema = z
  .strictObject({
    $schema: z.string().optional(),
    description: z.string().optional(),
    /** `first` (default): the first matching rule wins. `all`: every match, later ones winning. */
    mode: z.enum(['first', 'all']).default('first'),
    rules: z.array(RuleSchema).min(1),
  })
  .superRefine(({ rules }, context) => {
    const seen = new Set<string>();
    rules.forEach((rule, index) => {
      if (seen.has(rule.name)) {
        context.addIssue({
          code: 'custom',
          message: `rule name "${rule.name}" is used twice`,
          path: ['rules', index, 'name'],
        });
      }
      seen.add(rule.name);
    });
  });

export interface TriageRule {
  readonly name: string;
  readonly description?: string | undefined;
  readonly when: Condition;
  /** `this` (default): the delivery's record; `first`: its group's first record. */
  readonly target: RuleTarget;
  readonly set?: FeedbackPatch | undefined;
  /** Posts a message to the URL held by the environment variable `urlFrom` names. */
  readonly notify?: { readonly urlFrom: string } | undefined;
}

export interface TriageRules {
  readonly mode: 'first' | 'all';
  readonly rules: readonly TriageRule[];
}

export class TriageRulesError extends Error {
  override readonly name = 'TriageRulesError';
}

/**
 * Parses and validates a rules file's text: JSON, with comments and trailing commas allowed.
 *
 * @throws {TriageRulesError} with the line, column and JSON path of every problem, e.g.
 *   `12:18 rules[2].when.lte: ...`.
 */
export function parseTriageRules(text: string, source: string): TriageRules {
  let document: JsoncDocument;
  try {
    document = parseJsonc(text);
  } catch (error) {
    throw new TriageRulesError(
      `TRIAGE_RULES ${source}: not JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const parsed = TriageRulesSchema.safeParse(document.value);
  if (!parsed.success) {
    const lines = parsed.error.issues.map(
      (issue) => `${document.positionOf(issue.path)} ${jsonPath(issue.path)}: ${issue.message}`,
    );
    throw new TriageRulesError(`TRIAGE_RULES ${source}:\n  ${lines.join('\n  ')}`);
  }
  for (const rule of parsed.data.rules) compileCondition(rule.when);
  return { mode: parsed.data.mode, rules: parsed.data.rules };
}

/** @throws {TriageRulesError} when the file cannot be read or is not valid. */
export function loadTriageRules(path: string): TriageRules {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const reason = error instanceof Error && 'code' in error ? String(error.code) : 'unreadable';
    throw new TriageRulesError(`TRIAGE_RULES: cannot read ${path} (${reason})`);
  }
  return parseTriageRules(text, path);
}

function jsonPath(path: readonly PropertyKey[]): string {
  return (
    path
      .map((key, index) =>
        typeof key === 'number' ? `[${key}]` : `${index === 0 ? '' : '.'}${String(key)}`,
      )
      .join('') || '(top level)'
  );
}

function isRegExp(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}

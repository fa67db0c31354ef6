/**
 * Fields of a query string, a form or a JSON body, as the console and the CLI read them with zod:
 * empty ones count as absent, and the first problem is one line naming the field.
 */
import type { z } from 'zod';

export function presentFields(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== ''));
}

/** `name: what is wrong`; an unknown field is named with `expected` (the fields there are). */
export function firstProblem(error: z.ZodError, expected: string): string {
  const issue = error.issues[0]!;
  const name = issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : issue.path.join('.');
  const message =
    issue.code === 'unrecognized_keys'
      ? `unknown ${expected}`
      : issue.code === 'invalid_type'
        ? 'expected one value'
        : issue.message;
  return `${name}: ${message}`;
}

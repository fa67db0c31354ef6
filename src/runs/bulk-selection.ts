/**
 * A bulk action's selection as the console's form, its API and the CLI give it: the action, the
 * handler (for `run-again`), the search (`q`, `state`) and how far back (`since`: 30m, 24h, 7d).
 */
import { z } from 'zod';
import type { BulkSelection } from './bulk-actions.js';
import { firstProblem, presentFields } from './form-fields.js';
import { Since } from './since-span.js';

const BulkSelectionSchema = z
  .strictObject({
    action: z.enum(['retry', 'run-again']),
    handler: z.string().min(1).max(200).optional(),
    q: z.string().max(200, 'expected at most 200 characters').optional(),
    state: z.enum(['running', 'done', 'failed']).optional(),
    since: Since.optional(),
  })
  .refine((selection) => selection.action !== 'run-again' || selection.handler !== undefined, {
    message: 'run-again needs a handler',
    path: ['handler'],
  })
  // A retry takes every failed run of the result: a handler given with it was echoed and ignored.
  .refine((selection) => selection.action !== 'retry' || selection.handler === undefined, {
    message: 'only run-again takes a handler; a retry takes every failed run of the result',
    path: ['handler'],
  });

export type SelectionCheck =
  | { readonly ok: true; readonly selection: BulkSelection }
  | { readonly ok: false; readonly problem: string };

/** Reads a selection; empty fields count as absent, and form fields such as `confirm` are ignored. */
export function readBulkSelection(fields: Record<string, unknown>): SelectionCheck {
  const { confirm: _confirm, ...rest } = fields;
  const parsed = BulkSelectionSchema.safeParse(presentFields(rest));
  if (!parsed.success) {
    return {
      ok: false,
      problem: firstProblem(parsed.error, 'field; expected action, handler, q, state or since'),
    };
  }
  const { since, ...selection } = parsed.data;
  return {
    ok: true,
    selection: { ...selection, ...(since === undefined ? {} : { sinceMs: since }) },
  };
}

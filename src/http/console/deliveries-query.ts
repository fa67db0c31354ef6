/** The query of a deliveries search, as the console's page and its JSON API take it. */
import { z } from 'zod';
import { DELIVERY_FILTERS, MAX_OFFSET, type DeliveryQuery } from '../../runs/delivery-log.js';
import { firstProblem, presentFields } from '../../runs/form-fields.js';

/** Most deliveries on one page. */
export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 25;

const whole = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,6}$/, `expected a whole number from ${min} to ${max}`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `expected a whole number from ${min} to ${max}`);

const DeliveriesQuerySchema = z.strictObject({
  q: z.string().max(200, 'expected at most 200 characters').optional(),
  state: z.enum(DELIVERY_FILTERS).optional(),
  offset: whole(0, MAX_OFFSET).default(0),
  limit: whole(1, MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
});

export type QueryCheck =
  | { readonly ok: true; readonly query: DeliveryQuery }
  | { readonly ok: false; readonly problem: string };

/** Reads `q`, `state`, `offset` and `limit`; an empty parameter counts as absent. */
export function readDeliveriesQuery(params: Record<string, unknown>): QueryCheck {
  const parsed = DeliveriesQuerySchema.safeParse(presentFields(params));
  if (parsed.success) return { ok: true, query: parsed.data };
  return {
    ok: false,
    problem: firstProblem(parsed.error, 'parameter; expected q, state, offset or limit'),
  };
}

/** The query of the groups list, as the console's page and its JSON API take it. */
import { z } from 'zod';
import { MOST_LISTED_GROUPS } from '../../grouping/similar-groups.js';
import { firstProblem, presentFields } from '../../runs/form-fields.js';
import { SinceText, spanMs } from '../../runs/since-span.js';

/** How far back the groups list looks by default. */
export const DEFAULT_GROUPS_SINCE = '24h';

const GroupsQuerySchema = z.strictObject({
  since: SinceText.default(DEFAULT_GROUPS_SINCE),
  project: z.string().min(1).max(256, 'expected at most 256 characters').optional(),
  limit: z
    .string()
    .regex(/^\d{1,4}$/, `expected a whole number from 1 to ${MOST_LISTED_GROUPS}`)
    .transform(Number)
    .refine(
      (n) => n >= 1 && n <= MOST_LISTED_GROUPS,
      `expected a whole number from 1 to ${MOST_LISTED_GROUPS}`,
    )
    .optional(),
});

/** Groups the JSON API lists when not asked for a number. */
export const DEFAULT_LISTED_GROUPS = 50;

export interface GroupsQuery {
  /** As given: 30m, 24h, 7d. */
  readonly since: string;
  /** The same, in ms back from now. */
  readonly sinceMs: number;
  readonly project?: string | undefined;
  readonly limit: number;
}

export type GroupsQueryCheck =
  | { readonly ok: true; readonly query: GroupsQuery }
  | { readonly ok: false; readonly problem: string };

/**
 * Reads `since`, `project` and `limit`; an empty parameter counts as absent, a repeated one is
 * refused.
 */
export function readGroupsQuery(
  params: Record<string, unknown>,
  defaultLimit = DEFAULT_LISTED_GROUPS,
): GroupsQueryCheck {
  const parsed = GroupsQuerySchema.safeParse(presentFields(params));
  if (!parsed.success) {
    return {
      ok: false,
      problem: firstProblem(parsed.error, 'parameter; expected since, project or limit'),
    };
  }
  const { since, project, limit = defaultLimit } = parsed.data;
  return { ok: true, query: { since, sinceMs: spanMs(since), project, limit } };
}

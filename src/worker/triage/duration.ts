/**
 * A rule's span of time as people write it (`30s`, `10m`, `1h`, `7d`): one whole number and one
 * unit, so a file reads the same to everyone and a typo is an error, not a surprise.
 */

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

const DURATION = /^([1-9]\d{0,6})(s|m|h|d)$/;

/** The longest span a rule can name: a month, far beyond what the delivery history keeps by default. */
export const MAX_DURATION_MS = 30 * UNIT_MS.d;

/** Milliseconds, or a short reason the text is not a usable duration. */
export function parseDuration(text: string): { ms: number } | { problem: string } {
  const match = DURATION.exec(text.trim());
  if (!match) return { problem: 'expected a duration such as 30s, 10m, 1h or 7d' };
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (ms > MAX_DURATION_MS) return { problem: 'expected a duration of at most 30d' };
  return { ms };
}

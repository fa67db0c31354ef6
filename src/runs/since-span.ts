/**
 * How far back a list or a bulk action looks, as the console, its JSON API and the CLI take it:
 * a whole number and a unit (30m, 24h, 7d). A span of zero finds nothing, so it is refused as the
 * mistake it is rather than answered with an empty list.
 */
import { z } from 'zod';

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The text as given (30m, 24h, 7d), checked. */
export const SinceText = z
  .string()
  .regex(/^\d{1,5}[mhd]$/, 'expected a number and a unit, e.g. 30m, 24h or 7d')
  .refine((text) => spanMs(text) > 0, 'expected a span longer than zero, e.g. 30m, 24h or 7d');

/** The same, in ms. */
export const Since = SinceText.transform(spanMs);

/** A checked span's length in ms. */
export function spanMs(text: string): number {
  return Number(text.slice(0, -1)) * UNIT_MS[text.slice(-1) as keyof typeof UNIT_MS];
}

/** A span in ms, or what is wrong with the text (one line, without the field's name). */
export function readSince(text: string): { ms: number } | { problem: string } {
  const parsed = Since.safeParse(text);
  return parsed.success ? { ms: parsed.data } : { problem: parsed.error.issues[0]!.message };
}

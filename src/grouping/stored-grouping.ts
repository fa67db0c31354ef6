/**
 * What grouping stores of a delivery once it has joined a group (the value of the `of` hash),
 * and how a stored value reads back. Kept small: it is paid once per delivery kept.
 */
import type { SimilarWindow } from '../similar/similar-facts.js';

export interface StoredGrouping {
  /** The delivery's stream entry id. */
  readonly e: string;
  /** Its group. */
  readonly g: string;
  /** The group's size when it joined. */
  readonly s: number;
  /** The group's first delivery: key and record id. */
  readonly f: readonly [string, string];
  /** The windows its arrival crossed: [atLeast, withinMs]. */
  readonly c: readonly (readonly [number, number])[];
  /** Its matches: [entry id, score in thousandths], best first. */
  readonly m: readonly (readonly [string, number])[];
  /** Arrival, ms. */
  readonly t: number;
}

/** The value of a delivery that has entered the stream and not yet joined a group. */
export const PENDING = 'pending:';

export function readStored(value: string | null | undefined): StoredGrouping | undefined {
  if (typeof value !== 'string' || value.startsWith(PENDING)) return undefined;
  try {
    const parsed = JSON.parse(value) as StoredGrouping;
    // cjson encodes an empty table as an object.
    return {
      ...parsed,
      c: Array.isArray(parsed.c) ? parsed.c : [],
      m: Array.isArray(parsed.m) ? parsed.m : [],
    };
  } catch {
    return undefined;
  }
}

export function crossedWindows(stored: StoredGrouping): SimilarWindow[] {
  return stored.c.map(([atLeast, withinMs]) => ({ atLeast, withinMs }));
}

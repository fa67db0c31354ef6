/**
 * What grouping stores of a delivery once it has joined a group (the value of the `of` hash),
 * and how a stored value reads back. Kept small: it is paid once per delivery kept (docs/similar.md,
 * "Cost"). One line of fields split by `|`, which the scripts read too:
 *
 *   entry id | group | size | arrival ms | crossed | matches | first
 *
 * - group: the group's own id within its project (see similar-keys.ts), empty when it is the
 *   entry id (a delivery that started its group: most do; issue 30, memory);
 * - crossed: `atLeast:withinMs` pairs, comma-separated;
 * - matches: per match, its entry's distance back from this entry in base 36 (`ms` or `ms.seq`),
 *   a colon and its score in thousandths, base 36; comma-separated, best first. Only this file
 *   reads them; the scripts keep them as they are;
 * - first: the group's first delivery, `<bytes of record id>:<record id><key>`, the key left
 *   empty when it is made of the record id (keyOfRecord). Last, as a key may hold any character.
 */
import type { SimilarWindow } from '../similar/similar-facts.js';
import { keyOfRecord } from '../webhooks/delivery.js';

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
  const fields = /^([^|]*)\|([^|]*)\|(\d+)\|(\d+)\|([^|]*)\|([^|]*)\|(\d+):(.*)$/s.exec(value);
  if (!fields) return undefined;
  const [, e = '', g = '', s, t, c = '', m = '', length, rest = ''] = fields;
  // The length is in bytes, as the scripts count it.
  const bytes = Buffer.from(rest, 'utf8');
  const recordId = bytes.subarray(0, Number(length)).toString('utf8');
  const key = bytes.subarray(Number(length)).toString('utf8');
  return {
    e,
    g: g === '' ? e : g,
    s: Number(s),
    t: Number(t),
    f: [key === '' ? keyOfRecord(recordId) : key, recordId],
    c: list(c).map((pair) => {
      const [atLeast = 0, withinMs = 0] = pair.split(':').map(Number);
      return [atLeast, withinMs] as const;
    }),
    m: readMatches(e, m),
  };
}

/** A group's first delivery as stored: see the header. */
export function encodeFirst([key, recordId]: readonly [string, string]): string {
  return `${Buffer.byteLength(recordId, 'utf8')}:${recordId}${key === keyOfRecord(recordId) ? '' : key}`;
}

/** Matches as stored, relative to the delivery's own entry id: see the header. */
export function encodeMatches(
  own: string,
  matches: readonly (readonly [string, number])[],
): string {
  const [ownMs] = entryIdParts(own);
  return matches
    .map(([id, thousandths]) => {
      const [ms, seq] = entryIdParts(id);
      const back = ownMs - ms;
      const distance = seq === 0 ? back.toString(36) : `${back.toString(36)}.${seq.toString(36)}`;
      return `${distance}:${thousandths.toString(36)}`;
    })
    .join(',');
}

function readMatches(own: string, text: string): [string, number][] {
  const [ownMs] = entryIdParts(own);
  return list(text).map((match) => {
    const [distance = '', score = '0'] = match.split(':');
    const [back = '0', seq = '0'] = distance.split('.');
    return [`${ownMs - parseInt(back, 36)}-${parseInt(seq, 36)}`, parseInt(score, 36)];
  });
}

function entryIdParts(id: string): [number, number] {
  const [ms = 0, seq = 0] = id.split('-').map(Number);
  return [ms, seq];
}

function list(text: string): string[] {
  return text === '' ? [] : text.split(',');
}

export function crossedWindows(stored: StoredGrouping): SimilarWindow[] {
  return stored.c.map(([atLeast, withinMs]) => ({ atLeast, withinMs }));
}

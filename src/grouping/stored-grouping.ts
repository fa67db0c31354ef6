/**
 * What grouping stores of a delivery once it has joined a group (the value of the `of` hash),
 * and how a stored value reads back. Kept small: it is paid once per delivery kept (docs/similar.md,
 * "Cost"). One line of fields split by `|`, which the scripts read too:
 *
 *   entry id | group | size | arrival | crossed | matches | first
 *
 * - entry id: the delivery's stream entry id `ms-seq` in base 36, as `ms`, or `ms.seq` when seq
 *   is not 0 (8 or so characters where the id takes 15). A line written before kept the id as
 *   Redis writes it: an entry field with a dash is one, and its group is in full too
 *   (LEGACY_ENTRY);
 * - group: the group's own id within its project (see similar-keys.ts), empty when it is the
 *   entry id (a delivery that started its group: most do; issue 30, memory), else relative to the
 *   entry id: how many ms before it the group's entry is, in base 36, `.seq` when its seq is not
 *   0, and `_d` (`_d2`, ...) for a group an operator detached its first into (`.d`, `.d2`, ... in
 *   the group's id);
 * - arrival: how many ms before its entry id's time the delivery arrived (receivedAt), a few
 *   digits where the time itself takes 13. A line written before took the time itself: a number
 *   of 10^11 or more (three years of ms) is one (ARRIVAL_AS_TIME);
 * - crossed: `atLeast:withinMs` pairs, comma-separated;
 * - matches: per match, its score in thousandths in two base-36 digits, then its entry's
 *   distance back from this entry in base 36 (`ms` or `ms.seq`); comma-separated, best first.
 *   A line written before put the distance first and a colon before the score. Only this file
 *   reads them; the scripts keep them as they are;
 * - first: the group's first delivery when this one joined (an operator may take it out since:
 *   group-first.ts reads the first as it is now), `<bytes of record id>:<record id><key>`, the key left
 *   empty when it is made of the record id (keyOfRecord). Last, as a key may hold any character.
 *   Empty when the delivery started its group and its key is made of its record id: the first is
 *   the delivery itself, whose key the reader looked it up by.
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

/** An entry field with this in it is an entry id in full, of a line written before. */
export const LEGACY_ENTRY = '-';

/** The value of a delivery that has entered the stream and not yet joined a group. */
export const PENDING = 'pending:';

/** An arrival field this large is a time (a line written before offsets), not an offset. */
export const ARRIVAL_AS_TIME = 1e11;

/** The stored grouping of the delivery whose key is `key` (the first may be itself: see the header). */
export function readStored(
  value: string | null | undefined,
  key: string,
): StoredGrouping | undefined {
  if (typeof value !== 'string' || value.startsWith(PENDING)) return undefined;
  const fields = /^([^|]*)\|([^|]*)\|(\d+)\|(-?\d+)\|([^|]*)\|([^|]*)\|(?:(\d+):(.*))?$/s.exec(
    value,
  );
  if (!fields) return undefined;
  const [, entryField = '', groupField = '', s, arrival, c = '', m = '', length, rest] = fields;
  const e = entryOfField(entryField);
  const g = groupOfField(entryField, groupField);
  let first: readonly [string, string];
  if (length === undefined) {
    // Itself, a key made of its record id.
    if (groupField !== '' || !key.startsWith(KEY_OF_RECORD_PREFIX)) return undefined;
    first = [key, key.slice(KEY_OF_RECORD_PREFIX.length)];
  } else {
    // The length is in bytes, as the scripts count it.
    const bytes = Buffer.from(rest ?? '', 'utf8');
    const recordId = bytes.subarray(0, Number(length)).toString('utf8');
    const firstKey = bytes.subarray(Number(length)).toString('utf8');
    first = [firstKey === '' ? keyOfRecord(recordId) : firstKey, recordId];
  }
  return {
    e,
    g,
    s: Number(s),
    t: arrivalOf(e, Number(arrival)),
    f: first,
    c: list(c).map((pair) => {
      const [atLeast = 0, withinMs = 0] = pair.split(':').map(Number);
      return [atLeast, withinMs] as const;
    }),
    m: readMatches(e, m),
  };
}

/** The prefix of a key made of a record id (keyOfRecord). */
const KEY_OF_RECORD_PREFIX = keyOfRecord('');

function arrivalOf(entryId: string, stored: number): number {
  return Math.abs(stored) >= ARRIVAL_AS_TIME ? stored : entryIdParts(entryId)[0] - stored;
}

/** An entry id as stored: see the header. */
export function encodeEntry(id: string): string {
  const [ms, seq] = entryIdParts(id);
  return `${ms.toString(36)}${seq === 0 ? '' : `.${seq.toString(36)}`}`;
}

/** A group as stored in the line of the delivery whose entry id is `own`: see the header. */
export function encodeGroup(own: string, group: string): string {
  if (group === own) return '';
  const detached = DETACHED.exec(group)?.[0] ?? '';
  const [ms, seq] = entryIdParts(group.slice(0, group.length - detached.length));
  const back = entryIdParts(own)[0] - ms;
  return `${back.toString(36)}${seq === 0 ? '' : `.${seq.toString(36)}`}${detached.replace('.', '_')}`;
}

/** How a detached group's id ends (similar-keys.ts: `.d`, `.d2`, ...); its field in a line, `_d`... */
const DETACHED = /\.d\d*$/;
const DETACHED_FIELD = /_d\d*$/;

function entryOfField(field: string): string {
  if (field.includes(LEGACY_ENTRY)) return field;
  const [ms = '0', seq = '0'] = field.split('.');
  return `${parseInt(ms, 36)}-${parseInt(seq, 36)}`;
}

function groupOfField(entryField: string, field: string): string {
  const own = entryOfField(entryField);
  if (field === '') return own;
  if (entryField.includes(LEGACY_ENTRY)) return field;
  const detached = DETACHED_FIELD.exec(field)?.[0] ?? '';
  const [back = '0', seq = '0'] = field.slice(0, field.length - detached.length).split('.');
  return `${entryIdParts(own)[0] - parseInt(back, 36)}-${parseInt(seq, 36)}${detached.replace('_', '.')}`;
}

/** An arrival as stored: ms before the entry id's time (see the header). */
export function encodeArrival(entryId: string, arrival: number): string {
  return String(entryIdParts(entryId)[0] - arrival);
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
      return `${thousandths.toString(36).padStart(SCORE_DIGITS, '0')}${distance}`;
    })
    .join(',');
}

/** Base-36 digits of a score in thousandths (0 to 1000: "00" to "rs"). */
const SCORE_DIGITS = 2;

function readMatches(own: string, text: string): [string, number][] {
  const [ownMs] = entryIdParts(own);
  return list(text).map((match) => {
    const colon = match.indexOf(':');
    // As a line written before kept it: `distance:score`.
    const [distance, score] =
      colon === -1
        ? [match.slice(SCORE_DIGITS), match.slice(0, SCORE_DIGITS)]
        : [match.slice(0, colon), match.slice(colon + 1)];
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

/**
 * The history of every delivery a worker routed, kept as long as deliveries are remembered
 * (DEDUPE_TTL_SECONDS, to the end of the day it was received: a day's keys expire together) and
 * at most HISTORY_MAX_DELIVERIES of them, the newest, and searched in time proportional to what a
 * search finds, not to what is kept.
 *
 * Under `<prefix>:history:`, each delivery has a number (`seq`, in the order they were routed) and
 *   - `e:<seq>`: its entry, one compact JSON line (key, time, record id, feedback id, project,
 *     title, rating, reporter email, handlers), then one line per run that finished;
 *   - a field in `ids:<day>`, a hash: `k:<delivery key>`, `r:<record id>`, `f:<feedback id>`;
 *   - its number appended to `w:<day>:<word>` for each word it is found by (search-terms.ts),
 *     four bytes each: the numbers a word finds, oldest first; `w:<day>:!failed` for runs that
 *     failed for good. Older numbers of the word move, from time to time, to the front of
 *     `o:<day>:<word>`, written whole: an appended string keeps room to grow (write-history.lua);
 *   - `first:<day>`: the first number of the day, so the whole history's size is one subtraction;
 *   - `last:<day>`, the newest number of the day, and `words:<day>`, a list of its words: once the
 *     cap's `floor` (the lowest number kept) passes a day's newest number, its keys are dropped
 *     whole, word by word (write-history.lua). Until then readers skip numbers below the floor.
 * The writes go in batches, one script call each (history-writer.ts); reads are a few commands
 * whatever is kept. A history entry is a few hundred bytes; the whole record stays in its job.
 */
import { cutText } from '../cut-text.js';
import { keyOfRecord } from '../webhooks/delivery.js';
import type { FeedbackRecord } from '../webhooks/feedback-record.js';
import type { RedisConnection } from '../queue/redis.js';

const DAY_MS = 86_400_000;

/** A run that finished: what the history keeps of it. */
export interface HistoryOutcome {
  readonly state: 'completed' | 'failed';
  readonly at: string;
  readonly reason?: string;
  /** The handler's result, as much of it as fits a few hundred bytes (auto-triage: its rules and PATCH). */
  readonly result?: unknown;
}

/** What the history keeps of a record: what a list shows and a search finds. */
export type RecordSummary = Pick<
  FeedbackRecord,
  'id' | 'feedback_id' | 'project_id' | 'title' | 'rating'
> & { readonly reporter?: { readonly email: string } };

export interface HistoryEntry {
  readonly seq: number;
  readonly key: string;
  readonly receivedAt: string;
  readonly deliveryJobId: string;
  readonly record: RecordSummary;
  /** The handlers it was routed to, and any run on it since (a backfill). */
  readonly handlers: readonly string[];
  /** By handler, for the runs that finished; the others are under way. */
  readonly outcomes: Readonly<Record<string, HistoryOutcome>>;
}

/** One delivery's first line, as stored. Short names: there is one per delivery kept. */
interface StoredEntry {
  k: string;
  t: number;
  j: string;
  /** Left out when the key is made of it (keyOfRecord). */
  id?: string;
  f?: number;
  p?: string;
  ti?: string;
  ra?: number;
  em?: string;
  h: string[];
}

/** One outcome line, as stored. */
interface StoredOutcome {
  h: string;
  s: 'c' | 'f';
  at: number;
  r?: string;
  x?: unknown;
}

/**
 * The name of a delivery's routing wherever runs are listed by handler (its outcome here is kept
 * only when it failed for good, and once it is redone; the dead letter; bulk actions). No handler
 * may have it: defineHandler refuses it.
 */
export const ROUTING = 'routing';

/** HISTORY_MAX_DELIVERIES by default: some 0.8 GB of Redis at about 800 bytes a delivery. */
export const MOST_KEPT = 1_000_000;

export const LONGEST_TITLE = 200;
const LONGEST_REASON = 300;
const RESULT_BUDGET = 400;

export function historyKeys(prefix: string) {
  const base = `${prefix}:history:`;
  return {
    base,
    seq: `${base}seq`,
    entry: (seq: number) => `${base}e:${seq}`,
    ids: (day: number) => `${base}ids:${day}`,
    /** A word's newest numbers, appended to batch by batch. */
    word: (day: number, word: string) => `${base}w:${day}:${word}`,
    /** The same word's older numbers, that came before those of `word`. */
    olderOfWord: (day: number, word: string) => `${base}o:${day}:${word}`,
    first: (day: number) => `${base}first:${day}`,
    /** The lowest number kept: those below it the cap dropped (HISTORY_MAX_DELIVERIES). */
    floor: `${base}floor`,
  };
}

export type HistoryKeys = ReturnType<typeof historyKeys>;

export function dayOf(timeMs: number): number {
  return Math.floor(timeMs / DAY_MS);
}

/** When a day's keys expire: DEDUPE_TTL_SECONDS after its end. */
export function expiryOfDay(day: number, ttlSeconds: number): number {
  return (day + 1) * DAY_MS + ttlSeconds * 1000;
}

/** The days whose keys may still be kept, oldest first (and tomorrow, for a clock ahead). */
export function keptDays(nowMs: number, ttlSeconds: number): number[] {
  const days: number[] = [];
  for (let day = dayOf(nowMs - ttlSeconds * 1000); day <= dayOf(nowMs) + 1; day += 1) {
    days.push(day);
  }
  return days;
}

/** What the history keeps of a record. */
export function summarize(record: FeedbackRecord): RecordSummary {
  return {
    id: record.id,
    ...(typeof record.feedback_id === 'number' ? { feedback_id: record.feedback_id } : {}),
    ...(typeof record.project_id === 'string' ? { project_id: record.project_id } : {}),
    ...(typeof record.title === 'string' ? { title: cutText(record.title, LONGEST_TITLE) } : {}),
    ...(typeof record.rating === 'number' ? { rating: record.rating } : {}),
    ...(record.reporter?.email ? { reporter: { email: record.reporter.email } } : {}),
  };
}

export function storedEntry(
  entry: Pick<HistoryEntry, 'key' | 'deliveryJobId' | 'handlers'> & { record: FeedbackRecord },
  receivedAtMs: number,
): string {
  const record = summarize(entry.record);
  const stored: StoredEntry = {
    k: entry.key,
    t: receivedAtMs,
    j: entry.deliveryJobId,
    ...(entry.key === keyOfRecord(record.id) ? {} : { id: record.id }),
    ...(record.feedback_id === undefined ? {} : { f: record.feedback_id! }),
    ...(record.project_id === undefined ? {} : { p: record.project_id! }),
    ...(record.title === undefined ? {} : { ti: record.title! }),
    ...(record.rating === undefined ? {} : { ra: record.rating! }),
    ...(record.reporter ? { em: record.reporter.email } : {}),
    h: [...entry.handlers],
  };
  return JSON.stringify(stored);
}

export function storedOutcome(handler: string, outcome: HistoryOutcome): string {
  const stored: StoredOutcome = {
    h: handler,
    s: outcome.state === 'completed' ? 'c' : 'f',
    at: Date.parse(outcome.at),
    ...(outcome.reason ? { r: cutText(outcome.reason, LONGEST_REASON) } : {}),
    ...(outcome.result === undefined ? {} : compactResult(outcome.result)),
  };
  return JSON.stringify(stored);
}

/** A result whose JSON fits the budget; else the fields of it that fit, in order; else none. */
function compactResult(result: unknown): { x?: unknown } {
  const whole = JSON.stringify(result);
  if (whole === undefined) return {};
  if (whole.length <= RESULT_BUDGET) return { x: result };
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return {};
  let left = RESULT_BUDGET;
  const kept: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(result)) {
    const size = (JSON.stringify(value) ?? '').length + field.length + 4;
    if (size > left) continue;
    kept[field] = value;
    left -= size;
  }
  return Object.keys(kept).length === 0 ? {} : { x: kept };
}

/** An entry as stored (its line, then its outcome lines) read back. */
export function readEntry(seq: number, text: string): HistoryEntry | undefined {
  const [first, ...rest] = text.split('\n');
  let stored: StoredEntry;
  try {
    stored = JSON.parse(first!) as StoredEntry;
  } catch {
    return undefined;
  }
  const outcomes: Record<string, HistoryOutcome> = {};
  const latest: Record<string, number> = {};
  for (const line of rest) {
    try {
      const outcome = JSON.parse(line) as StoredOutcome;
      // Lines come in the order workers wrote them; the newest outcome is the one that holds.
      if ((latest[outcome.h] ?? -Infinity) > outcome.at) continue;
      latest[outcome.h] = outcome.at;
      outcomes[outcome.h] = {
        state: outcome.s === 'c' ? 'completed' : 'failed',
        at: new Date(outcome.at).toISOString(),
        ...(outcome.r === undefined ? {} : { reason: outcome.r }),
        ...(outcome.x === undefined ? {} : { result: outcome.x }),
      };
    } catch {
      // A line that cannot be read is left out; the others still say what happened.
    }
  }
  return {
    seq,
    key: stored.k,
    receivedAt: new Date(stored.t).toISOString(),
    deliveryJobId: stored.j,
    record: {
      id: stored.id ?? stored.k.slice(keyOfRecord('').length),
      ...(stored.f === undefined ? {} : { feedback_id: stored.f }),
      ...(stored.p === undefined ? {} : { project_id: stored.p }),
      ...(stored.ti === undefined ? {} : { title: stored.ti }),
      ...(stored.ra === undefined ? {} : { rating: stored.ra }),
      ...(stored.em === undefined ? {} : { reporter: { email: stored.em } }),
    },
    // A handler run on it later (a backfill) is one of its handlers too.
    handlers: [...new Set([...stored.h, ...Object.keys(outcomes)])],
    outcomes,
  };
}

/** Reads entries by number, in the order given; those no longer kept are left out. */
export async function readEntries(
  connection: RedisConnection,
  keys: HistoryKeys,
  seqs: readonly number[],
): Promise<HistoryEntry[]> {
  const entries: HistoryEntry[] = [];
  for (let start = 0; start < seqs.length; start += READ_AT_ONCE) {
    const some = seqs.slice(start, start + READ_AT_ONCE);
    const texts = await connection.mget(...some.map((seq) => keys.entry(seq)));
    texts.forEach((text, index) => {
      const entry = text === null ? undefined : readEntry(some[index]!, text);
      if (entry) entries.push(entry);
    });
  }
  return entries;
}

/** Entries one MGET reads: a few hundred kilobytes at most. */
const READ_AT_ONCE = 500;

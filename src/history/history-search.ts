/**
 * Searches the delivery history (delivery-history.ts), newest first. A delivery key, record id or
 * feedback id is one hash field per day kept; words are the numbers their lists hold, intersected;
 * no search reads an entry it does not show, except to filter by state, which reads compact
 * entries (at most SCAN_LIMIT). Nothing here reads a whole record.
 */
import { pipelineResults, type RedisConnection } from '../queue/redis.js';
import {
  historyKeys,
  keptDays,
  readEntries,
  type HistoryEntry,
  type HistoryKeys,
} from './delivery-history.js';
import { keyOfRecord } from '../webhooks/delivery.js';
import { wordsOf } from './search-terms.js';

/** Where a delivery of the history stands: some run failed for good, some is under way, or all done. */
export type HistoryState = 'running' | 'done' | 'failed';

export interface HistoryQuery {
  readonly q?: string | undefined;
  readonly state?: HistoryState | undefined;
  readonly offset: number;
  readonly limit: number;
}

export interface HistoryPage {
  readonly entries: readonly HistoryEntry[];
  /** How many match among the `searched`. */
  readonly total: number;
  /** How many deliveries the search covered: the whole history, or as many as a state filter read. */
  readonly searched: number;
}

export interface HistorySearch {
  search(query: HistoryQuery): Promise<HistoryPage>;
  /** The entry of a delivery key, while it is kept. */
  byKey(key: string): Promise<HistoryEntry | undefined>;
  /**
   * The entries of these delivery keys, in order (undefined for one no longer kept): two round
   * trips whatever their number, one field per key in each day's hash, then the entries.
   */
  byKeys(deliveryKeys: readonly string[]): Promise<(HistoryEntry | undefined)[]>;
  /** How many deliveries the history holds. */
  size(): Promise<number>;
}

/** Entries a state filter reads at most, newest first. */
export const SCAN_LIMIT = 5_000;
const READ_BATCH = 200;

export function stateOfEntry(entry: HistoryEntry): HistoryState {
  const outcomes = entry.handlers.map((handler) => entry.outcomes[handler]?.state);
  if (outcomes.includes('failed')) return 'failed';
  return outcomes.includes(undefined) ? 'running' : 'done';
}

export function createHistorySearch(options: {
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly ttlSeconds: number;
  readonly now?: () => number;
}): HistorySearch {
  const { connection, ttlSeconds } = options;
  const now = options.now ?? Date.now;
  const keys = historyKeys(options.prefix);

  /**
   * The newest number, and the oldest still kept: the first of the oldest day kept, or the floor
   * below which the cap dropped them, whichever is higher.
   */
  async function range(): Promise<{ newest: number; oldest: number }> {
    const days = keptDays(now(), ttlSeconds);
    const [newest, floor, ...firsts] = await connection.mget(
      keys.seq,
      keys.floor,
      ...days.map(keys.first),
    );
    const kept = firsts.flatMap((first) => (first === null ? [] : [Number(first)]));
    if (newest === null || kept.length === 0) return { newest: 0, oldest: 1 };
    return { newest: Number(newest), oldest: Math.max(Math.min(...kept), Number(floor ?? 1)) };
  }

  const search: HistorySearch = {
    async search({ q, state, offset, limit }) {
      const wanted = q?.trim() ?? '';
      const { newest, oldest } = await range();
      const size = Math.max(0, newest - oldest + 1);
      let found: Candidates =
        wanted === ''
          ? { from: newest, to: oldest }
          : await matching(connection, keys, wanted, now(), ttlSeconds);
      if (state === 'failed') {
        const failed = await postings(connection, keys, '!failed', now(), ttlSeconds);
        found = wanted === '' ? failed : intersect(toList(found), failed);
      }
      // Word lists keep the numbers of entries the cap dropped until their day goes whole.
      if (found instanceof Uint32Array) found = from(found, oldest);
      if (state === undefined) {
        const count = countOf(found);
        return {
          entries: await readEntries(connection, keys, slice(found, offset, offset + limit)),
          total: count,
          searched: size,
        };
      }
      // The state is in the entries: read them, newest first, up to SCAN_LIMIT.
      const matches: HistoryEntry[] = [];
      let scanned = 0;
      for (let start = 0; start < Math.min(countOf(found), SCAN_LIMIT); start += READ_BATCH) {
        const seqs = slice(found, start, Math.min(start + READ_BATCH, SCAN_LIMIT));
        scanned += seqs.length;
        for (const entry of await readEntries(connection, keys, seqs)) {
          if (stateOfEntry(entry) === state) matches.push(entry);
        }
      }
      return {
        entries: matches.slice(offset, offset + limit),
        total: matches.length,
        searched: countOf(found) <= SCAN_LIMIT ? size : scanned,
      };
    },

    async byKey(key) {
      const [entry] = await search.byKeys([key]);
      return entry;
    },

    async byKeys(deliveryKeys) {
      if (deliveryKeys.length === 0) return [];
      const days = keptDays(now(), ttlSeconds);
      const pipeline = connection.pipeline();
      const fields = deliveryKeys.map((key) => `k:${key}`);
      for (const day of days) pipeline.hmget(keys.ids(day), ...fields);
      // The newest day that has a key holds its entry.
      const seqs = new Array<number | undefined>(deliveryKeys.length).fill(undefined);
      for (const values of pipelineResults(await pipeline.exec())) {
        (values as (string | null)[]).forEach((seq, i) => {
          if (seq !== null) seqs[i] = Number(seq);
        });
      }
      const found = seqs.flatMap((seq) => (seq === undefined ? [] : [seq]));
      const entries = new Map((await readEntries(connection, keys, found)).map((e) => [e.seq, e]));
      return seqs.map((seq) => (seq === undefined ? undefined : entries.get(seq)));
    },

    async size() {
      const { newest, oldest } = await range();
      return Math.max(0, newest - oldest + 1);
    },
  };
  return search;
}

/**
 * Numbers, newest first: a range of all of them, or a list. The range is the whole history; it
 * holds a gap where a delivery routed a day late was kept by its older day, which a page skips.
 */
type Candidates = { from: number; to: number } | Uint32Array;

function countOf(found: Candidates): number {
  return found instanceof Uint32Array ? found.length : Math.max(0, found.from - found.to + 1);
}

function slice(found: Candidates, start: number, end: number): number[] {
  if (found instanceof Uint32Array) return [...found.subarray(start, end)];
  const seqs: number[] = [];
  for (let seq = found.from - start; seq > found.from - end && seq >= found.to; seq -= 1) {
    seqs.push(seq);
  }
  return seqs;
}

/** The numbers of `seqs` (newest first) from `oldest` on. */
function from(seqs: Uint32Array, oldest: number): Uint32Array {
  let end = seqs.length;
  while (end > 0 && seqs[end - 1]! < oldest) end -= 1;
  return seqs.subarray(0, end);
}

function toList(found: Candidates): Uint32Array {
  return found instanceof Uint32Array ? found : Uint32Array.from(slice(found, 0, countOf(found)));
}

/**
 * What a search text finds, newest first: the delivery whose key, record id or feedback id it is,
 * and the deliveries that have all of its words.
 */
async function matching(
  connection: RedisConnection,
  keys: HistoryKeys,
  text: string,
  nowMs: number,
  ttlSeconds: number,
): Promise<Uint32Array> {
  const days = keptDays(nowMs, ttlSeconds);
  const pipeline = connection.pipeline();
  // A record id is in its delivery's key, unless the sender gave a delivery id (then `r:`).
  const fields = [`k:${text}`, `k:${keyOfRecord(text)}`, `r:${text}`, `f:${text}`];
  for (const day of days) pipeline.hmget(keys.ids(day), ...fields);
  const exact = ((await pipeline.exec()) ?? []).flatMap(([error, values]) =>
    error
      ? []
      : (values as (string | null)[]).flatMap((seq) => (seq === null ? [] : [Number(seq)])),
  );
  const words = wordsOf(text);
  let byWords: Uint32Array = new Uint32Array(0);
  if (words.length > 0) {
    const lists = await Promise.all(
      words.map((word) => postings(connection, keys, word, nowMs, ttlSeconds)),
    );
    // The shortest list first: an intersection is never longer than it.
    lists.sort((a, b) => a.length - b.length);
    byWords = lists.reduce((kept, list) => intersect(kept, list));
  }
  return union(byWords, Uint32Array.from(new Set(exact)).sort().reverse());
}

/** The numbers a word finds over the days kept, newest first. */
async function postings(
  connection: RedisConnection,
  keys: HistoryKeys,
  word: string,
  nowMs: number,
  ttlSeconds: number,
): Promise<Uint32Array> {
  const days = keptDays(nowMs, ttlSeconds);
  const lists = await connection.mgetBuffer(
    ...days.flatMap((day) => [keys.olderOfWord(day, word), keys.word(day, word)]),
  );
  const total = lists.reduce((sum, list) => sum + (list ? list.length / 4 : 0), 0);
  const seqs = new Uint32Array(total);
  // Oldest day first, each its older numbers then its newest, each oldest first: written from the
  // end, the whole comes out newest first.
  let at = total;
  let sorted = true;
  for (const list of lists) {
    if (!list) continue;
    for (let offset = 0; offset + 4 <= list.length; offset += 4) {
      seqs[--at] = list.readUInt32BE(offset);
      if (at + 1 < total && seqs[at]! < seqs[at + 1]!) sorted = false;
    }
  }
  // A delivery routed a day after it was received is in an older day's list with a newer number.
  const ordered = sorted ? seqs : seqs.sort().reverse();
  return unique(ordered);
}

/**
 * Sorted newest first, each number once: `!failed` holds a delivery once per run that failed,
 * and a delivery routed again after a day may be in two days' lists.
 */
function unique(seqs: Uint32Array): Uint32Array {
  let kept = 0;
  for (let index = 0; index < seqs.length; index += 1) {
    if (kept === 0 || seqs[index] !== seqs[kept - 1]) seqs[kept++] = seqs[index]!;
  }
  return seqs.subarray(0, kept);
}

/** Both sorted newest first (descending). */
function intersect(a: Uint32Array, b: Uint32Array): Uint32Array {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push(a[i]!);
      i += 1;
      j += 1;
    } else if (a[i]! > b[j]!) i += 1;
    else j += 1;
  }
  return Uint32Array.from(out);
}

function union(a: Uint32Array, b: Uint32Array): Uint32Array {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const next = j >= b.length || (i < a.length && a[i]! >= b[j]!) ? a[i++]! : b[j++]!;
    if (out[out.length - 1] !== next) out.push(next);
  }
  return Uint32Array.from(out);
}

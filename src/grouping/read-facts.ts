/**
 * A delivery's stored grouping as the facts its handlers see (readFacts) and the console shows
 * (readShownFacts): its matches' keys and record ids are read from their stream entries (a match
 * whose entry is gone, past the age or the count kept, is left out); their titles, for the
 * console only, from the delivery history (titlesOf).
 */
import type { HistorySearch } from '../history/history-search.js';
import { pipelineResults, type RedisConnection } from '../queue/redis.js';
import type { ShownSimilarFacts, SimilarFacts } from '../similar/similar-facts.js';
import { keyOfRecord } from '../webhooks/delivery.js';
import { groupIdOf, keyOfLineField, lineField, type ProjectKeys } from './similar-keys.js';
import { ARRIVAL_AS_TIME, crossedWindows, type StoredGrouping } from './stored-grouping.js';

/** An entry of the stream, as grouping reads it back. */
export interface EntryFields {
  readonly key: string;
  readonly recordId: string;
}

/** An entry as the console reads it: one written before this version keeps a title ('t'). */
export interface ReadEntry extends EntryFields {
  readonly title?: string;
}

/** Where the console reads the titles grouping does not keep: the delivery history. */
export type TitleSource = Pick<HistorySearch, 'byKeys'>;

/** A delivery's stored grouping, where it is kept, and its group's size (default: as stored). */
type Grouped = [
  connection: RedisConnection,
  project: string,
  keys: ProjectKeys,
  stored: StoredGrouping,
  size?: number,
];

/** The facts its handlers see. */
export async function readFacts(...grouped: Grouped): Promise<SimilarFacts> {
  return (await readKept(...grouped)).facts;
}

/** The facts as the console shows them: each match with its title (titlesOf). */
export async function readShownFacts(
  history: TitleSource,
  ...grouped: Grouped
): Promise<ShownSimilarFacts> {
  const { facts, entries } = await readKept(...grouped);
  const titles = await titlesOf(history, entries);
  return {
    ...facts,
    matches: facts.matches.map(({ key, recordId, score }, i) => ({
      key,
      recordId,
      title: titles[i]!,
      score,
    })),
  };
}

/**
 * The facts, and the entries of their matches (in the same order): the matches whose entries
 * are kept, best first, each with its score (0 to 1).
 */
async function readKept(
  connection: RedisConnection,
  project: string,
  keys: ProjectKeys,
  stored: StoredGrouping,
  size = stored.s,
): Promise<{ facts: SimilarFacts; entries: ReadEntry[] }> {
  const read = await readEntries(
    connection,
    keys,
    stored.m.map(([id]) => id),
  );
  const kept = stored.m.flatMap(([, thousandths], i) => {
    const entry = read[i];
    return entry ? [{ entry, score: thousandths / 1000 }] : [];
  });
  return {
    facts: {
      group: {
        id: groupIdOf(project, stored.g),
        size,
        first: { key: stored.f[0], recordId: stored.f[1] },
      },
      matches: kept.map(({ entry, score }) => ({
        key: entry.key,
        recordId: entry.recordId,
        score,
      })),
      crossed: crossedWindows(stored),
    },
    entries: kept.map(({ entry }) => entry),
  };
}

/**
 * The titles of these entries' deliveries, in order: an entry's own (one written before this
 * version), else its delivery's in the history, '' for none (no entry, or its history entry is
 * gone). One read of the history for them all (byKeys), none when every title is known.
 */
export async function titlesOf(
  history: TitleSource,
  entries: readonly (ReadEntry | undefined)[],
): Promise<string[]> {
  const wanted = entries.flatMap((entry) =>
    entry !== undefined && entry.title === undefined ? [entry.key] : [],
  );
  const found = wanted.length === 0 ? [] : await history.byKeys(wanted);
  const byKey = new Map(wanted.map((key, i) => [key, found[i]?.record.title ?? '']));
  return entries.map((entry) => entry?.title ?? (entry ? (byKey.get(entry.key) ?? '') : ''));
}

/** The entries of these ids, in order; undefined for one that is gone. One round trip. */
export async function readEntries(
  connection: RedisConnection,
  keys: ProjectKeys,
  ids: readonly string[],
): Promise<(ReadEntry | undefined)[]> {
  if (ids.length === 0) return [];
  const pipeline = connection.pipeline();
  for (const id of ids) pipeline.xrange(keys.docs, id, id);
  return pipelineResults(await pipeline.exec()).map((result) => {
    const entry = (result as [string, string[]][])[0];
    return entry ? entryFields(entry[1]) : undefined;
  });
}

export function entryFields(fields: readonly string[]): ReadEntry {
  const read = (name: string) => {
    const at = fields.findIndex((field, i) => i % 2 === 0 && field === name);
    return at === -1 ? undefined : (fields[at + 1] ?? '');
  };
  // An entry keeps no key that is made of its record id.
  const recordId = read('r') ?? '';
  const title = read('t');
  return {
    key: read('k') || keyOfRecord(recordId),
    recordId,
    ...(title === undefined ? {} : { title }),
  };
}

/**
 * The lines of these deliveries (by key), in order; null for one with none. A line written
 * before this version is under the key itself (lineField): both are read, in one command.
 */
export async function readLines(
  connection: RedisConnection,
  keys: ProjectKeys,
  deliveryKeys: readonly string[],
): Promise<(string | null)[]> {
  if (deliveryKeys.length === 0) return [];
  const lines = await connection.hmget(
    keys.of,
    ...deliveryKeys.flatMap((key) => [lineField(key), key]),
  );
  return deliveryKeys.map((_, i) => lines[2 * i] ?? lines[2 * i + 1] ?? null);
}

/**
 * The delivery key of a member of a group's members key (lineField), given its line: a member
 * whose line keeps the arrival time itself was written before this version, and is the key.
 */
export function keyOfMember(member: string, line: string | null | undefined): string {
  const arrival = line?.split('|')[3];
  return arrival !== undefined && Math.abs(Number(arrival)) >= ARRIVAL_AS_TIME
    ? member
    : keyOfLineField(member);
}

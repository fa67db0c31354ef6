/**
 * A delivery's stored grouping as the facts its handlers and the console see: its matches' keys,
 * record ids and titles are read from their stream entries (a match whose entry is gone, past
 * the age or the count kept, is left out).
 */
import type { RedisConnection } from '../queue/redis.js';
import type { SimilarFacts, SimilarMatchFact } from '../similar/similar-facts.js';
import { keyOfRecord } from '../webhooks/delivery.js';
import { groupIdOf, keyOfLineField, lineField, type ProjectKeys } from './similar-keys.js';
import { ARRIVAL_AS_TIME, crossedWindows, type StoredGrouping } from './stored-grouping.js';

/** An entry of the stream, as grouping reads it back. */
export interface EntryFields {
  readonly key: string;
  readonly recordId: string;
  readonly title: string;
}

export async function readFacts(
  connection: RedisConnection,
  project: string,
  keys: ProjectKeys,
  stored: StoredGrouping,
  size = stored.s,
): Promise<SimilarFacts> {
  const entries = await readEntries(
    connection,
    keys,
    stored.m.map(([id]) => id),
  );
  const matches: SimilarMatchFact[] = [];
  stored.m.forEach(([, thousandths], i) => {
    const entry = entries[i];
    if (entry) matches.push({ ...entry, score: thousandths / 1000 });
  });
  return {
    group: {
      id: groupIdOf(project, stored.g),
      size,
      first: { key: stored.f[0], recordId: stored.f[1] },
    },
    matches,
    crossed: crossedWindows(stored),
  };
}

/** The entries of these ids, in order; undefined for one that is gone. One round trip. */
export async function readEntries(
  connection: RedisConnection,
  keys: ProjectKeys,
  ids: readonly string[],
): Promise<(EntryFields | undefined)[]> {
  if (ids.length === 0) return [];
  const pipeline = connection.pipeline();
  for (const id of ids) pipeline.xrange(keys.docs, id, id);
  const answers = (await pipeline.exec()) ?? [];
  return answers.map(([error, result]) => {
    if (error) throw error;
    const entry = (result as [string, string[]][])[0];
    return entry ? entryFields(entry[1]) : undefined;
  });
}

export function entryFields(fields: readonly string[]): EntryFields {
  const read = (name: string) => {
    const at = fields.findIndex((field, i) => i % 2 === 0 && field === name);
    return at === -1 ? '' : (fields[at + 1] ?? '');
  };
  // An entry keeps no key that is made of its record id.
  const recordId = read('r');
  return { key: read('k') || keyOfRecord(recordId), recordId, title: read('t') };
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

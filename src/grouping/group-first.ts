/**
 * A group's first delivery as it is now. A group is known by its first delivery's entry id, and
 * each member's line keeps the first as it was when the member joined (stored-grouping.ts). When
 * an operator takes the first out (similar-detach.lua), the group keeps its id and every other
 * member, and its first becomes the earliest member left, by arrival: the join script works it
 * out for a delivery that joins (similar-join.lua, `firstNow`), and the console, a new run a
 * bulk run-again adds, and every run when it starts (runs.ts: its first attempt too, which may
 * have waited in its queue) here, so a rule with `"target": "first"` never PATCHes the record the
 * operator took out. No line is written again, so a detach costs the same in a
 * group of any size, and lines written before read the same way.
 */
import type { RedisConnection } from '../queue/redis.js';
import { keyOfMember, readEntries, readLines } from './read-facts.js';
import { groupMembersKey, type ProjectKeys } from './similar-keys.js';
import { readStored } from './stored-grouping.js';
import { keyOfRecord } from '../webhooks/delivery.js';

const KEY_OF_RECORD_PREFIX = keyOfRecord('');

/** A delivery: its key and record id. */
type First = readonly [key: string, recordId: string];

/** The first of `group` as it is now, given the one a member's line names (see the header). */
export async function firstNow(
  connection: RedisConnection,
  keys: ProjectKeys,
  group: string,
  first: First,
): Promise<First> {
  const [line] = await readLines(connection, keys, [first[0]]);
  return firstNowGiven(connection, keys, group, first, line ?? null);
}

/**
 * As firstNow, with the line of the first it is given read already (null: it has none), so a
 * reader that needs other lines too reads them all at once: while that first is still in the
 * group, as it nearly always is, nothing more is read.
 */
export async function firstNowGiven(
  connection: RedisConnection,
  keys: ProjectKeys,
  group: string,
  first: First,
  line: string | null,
): Promise<First> {
  const stored = readStored(line, first[0]);
  // Still in the group, or nothing says otherwise (its line is gone, or it has not joined yet).
  if (stored === undefined || stored.g === group) return first;
  // The earliest member left, by arrival (ties by member, as Redis orders them).
  const [member] = await connection.zrangebyscore(
    groupMembersKey(keys, group),
    '-inf',
    '+inf',
    'LIMIT',
    0,
    1,
  );
  if (member === undefined) return first;
  // A member is its line's field, or its key for a line written before (keyOfMember).
  const memberLine = await connection.hget(keys.of, member);
  const key = keyOfMember(member, memberLine);
  const memberStored = readStored(memberLine, key);
  const [entry] = memberStored ? await readEntries(connection, keys, [memberStored.e]) : [];
  const ofRecord = key.startsWith(KEY_OF_RECORD_PREFIX)
    ? key.slice(KEY_OF_RECORD_PREFIX.length)
    : '';
  return [key, entry?.recordId ?? ofRecord];
}

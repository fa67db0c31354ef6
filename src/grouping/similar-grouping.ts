/**
 * Grouping in routing (docs/similar.md): each routed delivery is compared with the earlier
 * deliveries of its project, and joins its best match's group or starts one.
 *
 * Redis holds the truth, per project: a stream of entries in arrival order (the order XADD
 * gives), a hash of each delivery's grouping, a sorted set of members per group. Each worker
 * keeps an index of the stream in memory, caught up from the last entry it read, and grouping a
 * delivery is three steps:
 * 1. "enter" (one script): the delivery's entry is added to the stream, once; a delivery that
 *    had joined a group before (its routing runs again) gets its stored facts back, and stops.
 * 2. The index is caught up to the entries BEFORE the new one and queried: every worker computes
 *    the same matches from the same stream. An entry read whose group is stored takes it;
 *    one whose worker has not joined it yet is grouped here the way that worker will.
 * 3. "join" (one script): the delivery joins its best match's group as stored (or a new group
 *    of its own), once, and each window the handlers declared is checked for a crossing.
 * A failure (Redis away) fails the routing job, which BullMQ retries: nothing is swallowed, and
 * the retry finds what was written and goes on from there.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from '../logger.js';
import type { RedisConnection } from '../queue/redis.js';
import {
  compactDocument,
  decodeCompactDocument,
  encodeCompactDocument,
  type CompactDocument,
} from '../similar/compact-document.js';
import { documentTerms } from '../similar/document-terms.js';
import { chooseGroup } from '../similar/grouping.js';
import type { SimilarFacts, SimilarWindow } from '../similar/similar-facts.js';
import { DEFAULT_MATCH_LIMIT, SimilarityIndex } from '../similar/similarity-index.js';
import { keyOfRecord, type Delivery } from '../webhooks/delivery.js';
import { readFacts, type EntryFields } from './read-facts.js';
import { groupIdOf, projectKeys, projectsKey, type ProjectKeys } from './similar-keys.js';
import { encodeFirst, encodeMatches, readStored, type StoredGrouping } from './stored-grouping.js';

const ENTER = readFileSync(new URL('./similar-enter.lua', import.meta.url), 'utf8');
const JOIN = readFileSync(new URL('./similar-join.lua', import.meta.url), 'utf8');

/** Characters of a title kept in an entry: enough for a list of matches. */
export const TITLE_CHARACTERS = 120;

/** The first of no group: the join reads it only with a best match. */
const NO_FIRST: readonly [string, string] = ['', ''];

/** Entries read per round trip while catching up. */
const CATCH_UP_BATCH = 500;

/** Oldest entries dropped per "enter" at most: each enter adds one, so the bound is kept. */
const MOST_DROPPED_PER_ENTER = 100;

/** The in-memory index is built again from the stream once it holds this much more than kept. */
const INDEX_SLACK = 0.1;

export interface SimilarGroupingOptions {
  readonly connection: RedisConnection;
  readonly prefix: string;
  /** Score from which a delivery joins its best match's group (SIMILAR_THRESHOLD). */
  readonly threshold: number;
  /** Most deliveries kept per project (SIMILAR_KEEP). */
  readonly keep: number;
  /** How long a delivery is kept (DEDUPE_TTL_SECONDS). */
  readonly ttlSeconds: number;
  /** The windows the worker's handlers declared; deduplicated here. */
  readonly windows: readonly SimilarWindow[];
  readonly logger: Logger;
  /** The clock, for tests. */
  readonly now?: () => number;
}

export interface SimilarGrouping {
  /** Groups the delivery (once, however often it is called) and says what came of it. */
  group(delivery: Delivery): Promise<SimilarFacts>;
}

type Scripted = RedisConnection & {
  similarEnter(...args: (string | number | Buffer)[]): Promise<[string, ...unknown[]]>;
  similarJoin(...args: (string | number)[]): Promise<string>;
};

/** One project's index in memory, in stream order. */
interface ProjectIndex {
  readonly index: SimilarityIndex;
  readonly entries: (EntryFields & { readonly id: string; readonly at: number })[];
  readonly groups: string[];
  readonly firsts: Map<string, readonly [string, string]>;
  readonly ordinalOf: Map<string, number>;
  /** The last entry id read; '' for none. */
  lastId: string;
}

/** The work in flight on one project's index: catch-ups and queries take turns. */
interface ProjectTurn {
  tail: Promise<unknown>;
  pending: number;
}

/**
 * Projects whose index a worker keeps in memory at once, the least recently used let go first
 * (an index let go is built again from the stream when its project routes again).
 */
export const MOST_PROJECT_INDEXES = 32;

export function createSimilarGrouping(options: SimilarGroupingOptions): SimilarGrouping {
  const { prefix, threshold, keep, logger } = options;
  const now = options.now ?? Date.now;
  const ttlMs = options.ttlSeconds * 1000;
  const connection = options.connection as Scripted;
  connection.defineCommand('similarEnter', { numberOfKeys: 4, lua: ENTER });
  connection.defineCommand('similarJoin', { numberOfKeys: 2, lua: JOIN });
  const windows = distinctWindows(options.windows);
  const windowsJson = JSON.stringify(windows.map((w) => [w.atLeast, w.withinMs]));
  /** Least recently used first. */
  const projects = new Map<string, ProjectIndex>();
  /** Only projects with work in flight: a turn is dropped once its work is done. */
  const turns = new Map<string, ProjectTurn>();

  const indexOf = (project: string): ProjectIndex => {
    const state = projects.get(project) ?? newIndex();
    projects.delete(project);
    projects.set(project, state);
    for (const idle of projects.keys()) {
      if (projects.size <= MOST_PROJECT_INDEXES) break;
      if (idle !== project && !turns.has(idle)) projects.delete(idle);
    }
    return state;
  };

  /**
   * Work on a project's index, one piece at a time. The turn is the project's, not the index's:
   * an index built again (catchUp) must not let a second catch-up run beside the first.
   */
  const inTurn = <T>(project: string, work: () => Promise<T>): Promise<T> => {
    let turn = turns.get(project);
    if (!turn) {
      turn = { tail: Promise.resolve(), pending: 0 };
      turns.set(project, turn);
    }
    const current = turn;
    current.pending += 1;
    const result = current.tail.then(work);
    current.tail = result
      .catch(() => {})
      .finally(() => {
        current.pending -= 1;
        if (current.pending === 0 && turns.get(project) === current) turns.delete(project);
      });
    return result;
  };

  const catchUp = async (keys: ProjectKeys, project: string, before: string) => {
    let state = indexOf(project);
    const oldest = state.entries[0];
    if (
      state.index.size > keep * (1 + INDEX_SLACK) ||
      (oldest !== undefined && oldest.at < now() - ttlMs * (1 + INDEX_SLACK))
    ) {
      // Built again from what the stream keeps: the index is bounded as the stream is.
      const fresh = newIndex();
      projects.set(project, fresh);
      state = fresh;
    }
    for (;;) {
      const start = state.lastId === '' ? '-' : `(${state.lastId}`;
      const read = (await connection.xrangeBuffer(
        keys.docs,
        start,
        `(${before}`,
        'COUNT',
        CATCH_UP_BATCH,
      )) as [Buffer, Buffer[]][];
      if (read.length === 0) return state;
      const entries = read.map(([id, fields]) => readEntry(id.toString(), fields));
      const stored = await connection.hmget(keys.of, ...entries.map((entry) => entry.key));
      entries.forEach((entry, i) => {
        const grouping = readStored(stored[i]);
        let group = grouping?.g;
        if (group === undefined) {
          // As its own worker decides (below): the same matches, the same rule.
          const found = state.index.query(entry.document, DEFAULT_MATCH_LIMIT);
          group =
            chooseGroup(found, (match) => state.groups[match.ordinal]!, threshold) ?? entry.id;
        }
        if (!state.firsts.has(group)) {
          state.firsts.set(group, grouping?.f ?? [entry.key, entry.recordId]);
        }
        state.ordinalOf.set(entry.id, state.entries.length);
        state.entries.push({
          id: entry.id,
          key: entry.key,
          recordId: entry.recordId,
          title: entry.title,
          at: entry.at,
        });
        state.groups.push(group);
        state.index.add(entry.id, entry.document);
      });
      state.lastId = entries[entries.length - 1]!.id;
      if (read.length < CATCH_UP_BATCH) return state;
    }
  };

  const group = async (delivery: Delivery): Promise<SimilarFacts> => {
    const record = delivery.record;
    const project = typeof record.project_id === 'string' ? record.project_id : '';
    const keys = projectKeys(prefix, project);
    const state = indexOf(project);
    const document = compactDocument(documentTerms(record), (hash) => state.index.rarity(hash));
    const at = Date.parse(delivery.receivedAt);
    const t = Number.isFinite(at) ? at : now();
    const title = cut(typeof record.title === 'string' ? record.title : '', TITLE_CHARACTERS);
    const entered = await connection.similarEnter(
      keys.docs,
      keys.of,
      keys.groups,
      projectsKey(prefix),
      keys.base,
      delivery.key,
      record.id,
      title,
      Buffer.from(encodeCompactDocument(document)),
      `${now() - ttlMs}-0`,
      keep,
      ttlMs,
      project,
      MOST_DROPPED_PER_ENTER,
      delivery.key === keyOfRecord(record.id) ? '' : delivery.key,
    );
    if (entered[0] === 'joined') {
      return readFacts(connection, project, keys, readStored(entered[1] as string)!);
    }
    const entryId = entered[1] as string;
    const oldestKept = entered[4] as string;
    const droppedByCount = Number(entered[2]);
    if (droppedByCount > 0) {
      logger.warn(
        { project, dropped: droppedByCount, keep },
        'similar: dropped the oldest deliveries of the project, past SIMILAR_KEEP',
      );
    }

    const { matches, best, bestGroup, bestFirst } = await inTurn(project, async () => {
      const current = await catchUp(keys, project, entryId);
      // Another routing of this worker may have read past this entry already: only the entries
      // before it count, so the answer is the one every worker computes.
      // And only those the stream still keeps: the index lets go of the others a little later.
      const own = current.ordinalOf.get(entryId) ?? current.index.size;
      const later = current.index.size - own;
      const kept = firstKept(current.entries, oldestKept);
      const found = current.index
        .query(document, DEFAULT_MATCH_LIMIT + later + kept)
        .filter((match) => match.ordinal < own && match.ordinal >= kept)
        .slice(0, DEFAULT_MATCH_LIMIT);
      // The group with the most evidence among the matches (grouping.ts), joined through its
      // best member here: the join script takes that member's group as stored.
      const groupOfMatch = (match: { ordinal: number }) => current.groups[match.ordinal]!;
      const joined = chooseGroup(found, groupOfMatch, threshold);
      const chosen =
        joined === undefined ? undefined : found.find((match) => groupOfMatch(match) === joined);
      const bestGroup = chosen ? current.groups[chosen.ordinal]! : '';
      return {
        matches: found.map((match) => ({ ...current.entries[match.ordinal]!, score: match.score })),
        best: chosen ? current.entries[chosen.ordinal]! : undefined,
        bestGroup,
        bestFirst: (chosen && current.firsts.get(bestGroup)) || NO_FIRST,
      };
    });

    const stored = readStored(
      await connection.similarJoin(
        keys.of,
        keys.groups,
        keys.base,
        delivery.key,
        entryId,
        t,
        ttlMs,
        entryId,
        encodeFirst([delivery.key, record.id]),
        best?.key ?? '',
        bestGroup,
        encodeFirst(bestFirst),
        encodeMatches(
          entryId,
          matches.map((match) => [match.id, Math.round(match.score * 1000)]),
        ),
        windowsJson,
      ),
    ) as StoredGrouping;
    if (stored.e !== entryId) return readFacts(connection, project, keys, stored);
    return {
      group: {
        id: groupIdOf(project, stored.g),
        size: stored.s,
        first: { key: stored.f[0], recordId: stored.f[1] },
      },
      matches: matches.map(({ key, recordId, title, score }) => ({ key, recordId, title, score })),
      crossed: stored.c.map(([atLeast, withinMs]) => ({ atLeast, withinMs })),
    };
  };

  return { group };
}

function newIndex(): ProjectIndex {
  return {
    index: new SimilarityIndex(),
    entries: [],
    groups: [],
    firsts: new Map(),
    ordinalOf: new Map(),
    lastId: '',
  };
}

function readEntry(
  id: string,
  fields: Buffer[],
): EntryFields & { id: string; at: number; document: CompactDocument } {
  const values = new Map<string, Buffer>();
  for (let i = 0; i + 1 < fields.length; i += 2) values.set(fields[i]!.toString(), fields[i + 1]!);
  let document: CompactDocument;
  try {
    document = decodeCompactDocument(values.get('d') ?? new Uint8Array());
  } catch {
    // An entry of another version: it takes its place, and matches nothing.
    document = { hashes: new Uint32Array(), counts: new Uint8Array() };
  }
  const recordId = values.get('r')?.toString() ?? '';
  return {
    id,
    at: Number(id.split('-')[0]),
    // An entry keeps no key that is made of its record id.
    key: values.get('k')?.toString() || keyOfRecord(recordId),
    recordId,
    title: values.get('t')?.toString() ?? '',
    document,
  };
}

/** The ordinal of the first entry at or after `oldest` (stream ids ascend with ordinals). */
function firstKept(entries: readonly { readonly id: string }[], oldest: string): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (streamIdBefore(entries[middle]!.id, oldest)) low = middle + 1;
    else high = middle;
  }
  return low;
}

function streamIdBefore(a: string, b: string): boolean {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am < bm || (am === bm && as < bs);
}

function distinctWindows(windows: readonly SimilarWindow[]): SimilarWindow[] {
  const seen = new Map<string, SimilarWindow>();
  for (const window of windows) seen.set(`${window.atLeast}:${window.withinMs}`, window);
  return [...seen.values()];
}

/** The first `characters` characters, never half of one. */
function cut(text: string, characters: number): string {
  return Array.from(text.slice(0, characters * 2))
    .slice(0, characters)
    .join('');
}

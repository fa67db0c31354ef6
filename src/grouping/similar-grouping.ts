/**
 * Grouping in routing (docs/similar.md): each routed delivery is compared with the earlier
 * deliveries of its project, and joins its best match's group or starts one.
 *
 * Redis holds the truth, per project: a stream of entries in arrival order (the order XADD
 * gives), a hash of each delivery's grouping, a sorted set of members per group. Each worker
 * keeps an index of the stream in memory, caught up from the last entry it read.
 *
 * A project's deliveries take turns in a worker (each reads its predecessors), so they are
 * grouped in batches ("group commit"): when a project's turn starts, every delivery of that
 * project waiting in this worker (at most MOST_PER_BATCH) is grouped in two round trips.
 * 1. "enter" (one script): the batch's entries are added to the stream, in order, each once; a
 *    delivery that had joined a group before (its routing runs again) gets its stored facts back,
 *    and stops. The same script returns the entries the index has not read yet, up to the
 *    batch's newest, each with its stored grouping, and the operator's detaches it has not read
 *    (an entry the index holds moves to its new group).
 * 2. In memory, in the batch's order: the index is caught up to the entries BEFORE a delivery's
 *    own and queried, so every worker computes the same matches from the same stream, and a
 *    delivery of the batch is grouped exactly as if the batch had come one at a time. An entry
 *    read whose group is stored takes it; one of this batch takes the group chosen for it here;
 *    one whose worker has not joined it yet is grouped here the way that worker will.
 * 3. "join" (one script): in order, each delivery joins its best match's group as stored (or a
 *    new group of its own), once, and each window the handlers of the running workers declare
 *    (this one's and the roster's) is checked for a crossing.
 * A failure (Redis away) fails the batch's routing jobs, which BullMQ retries: nothing is
 * swallowed, and a retry finds what was written and goes on from there.
 */
import type { Logger } from '../logger.js';
import type { RedisConnection } from '../queue/redis.js';
import {
  compactTerms,
  decodeCompactDocument,
  MAX_TERMS,
  encodeCompactDocument,
  type CompactDocument,
} from '../similar/compact-document.js';
import { choiceRarity, choiceRarityRange } from '../similar/choice-rarity.js';
import { DEFAULT_TERM_OPTIONS, recordTerms } from '../similar/document-terms.js';
import { chooseGroup } from '../similar/grouping.js';
import type { SimilarFacts, SimilarWindow } from '../similar/similar-facts.js';
import { distinctWindows } from '../similar/similar-window.js';
import { DEFAULT_MATCH_LIMIT, SimilarityIndex } from '../similar/similarity-index.js';
import { keyOfRecord, type Delivery } from '../webhooks/delivery.js';
import { projectOf } from '../webhooks/feedback-record.js';
import { groupingScript } from './grouping-script.js';
import { readFacts, readLines, type EntryFields } from './read-facts.js';
import { groupIdOf, projectKeys, projectsKey, type ProjectKeys } from './similar-keys.js';
import { encodeFirst, encodeMatches, readStored, type StoredGrouping } from './stored-grouping.js';

const ENTER = groupingScript('similar-enter.lua');
const JOIN = groupingScript('similar-join.lua');

/** The first of no group: the join reads it only with a best match. */
const NO_FIRST: readonly [string, string] = ['', ''];

/** Entries read per round trip while catching up. */
const CATCH_UP_BATCH = 500;

/** Oldest entries dropped per delivery entered at most: each adds one, so the bound is kept. */
const MOST_DROPPED_PER_ENTER = 100;

/** A project's deliveries grouped in one batch at most, so that its scripts stay short. */
export const MOST_PER_BATCH = 100;

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
  /**
   * The windows the handlers of the other running workers declare (the roster), read at each
   * batch: a delivery is checked against these too, so a crossing is found once, whichever
   * worker routes it. Default: none.
   */
  readonly windowsElsewhere?: () => readonly SimilarWindow[];
  readonly logger: Logger;
  /** The clock, for tests. */
  readonly now?: () => number;
}

export interface SimilarGrouping {
  /** Groups the delivery (once, however often it is called) and says what came of it. */
  group(delivery: Delivery): Promise<SimilarFacts>;
}

type Scripted = RedisConnection & {
  similarEnterBuffer(
    ...args: (string | number | Buffer)[]
  ): Promise<[EnterResult[], ReadEntry[], StreamEntry[]]>;
  similarJoin(...args: (string | number)[]): Promise<string[]>;
};

/** What "enter" says of a delivery: ['joined', stored] or ['entered', id, byCount, byAge, oldest]. */
type EnterResult = [Buffer, Buffer] | [Buffer, Buffer, number, number, Buffer];

/**
 * An entry "enter" read back: its id, its fields, its stored grouping ('' for none yet); or its id
 * alone for an entry that call added (the batch has its fields, and it has no grouping yet).
 */
type ReadEntry = [Buffer, Buffer[], Buffer] | [Buffer];

/** A stream entry as XRANGE gives it: its id and fields (a detach: e, the entry; g, its group). */
type StreamEntry = [Buffer, Buffer[]];

type Entry = EntryFields & { readonly id: string; readonly at: number };

/** An entry read from the stream, not yet in the index. */
type Unread = Entry & { readonly document: CompactDocument; readonly stored: string };

/** One project's index in memory, in stream order. */
interface ProjectIndex {
  readonly index: SimilarityIndex;
  readonly entries: Entry[];
  readonly groups: string[];
  readonly firsts: Map<string, readonly [string, string]>;
  readonly ordinalOf: Map<string, number>;
  /** The last entry id read; '' for none. */
  lastId: string;
  /** The last of the operator's detaches read (similar-detach.lua); '' for none. */
  lastDetach: string;
}

/** A delivery waiting for its project's turn. */
interface Waiting {
  readonly delivery: Delivery;
  resolve(facts: SimilarFacts | Promise<SimilarFacts>): void;
  reject(error: unknown): void;
}

/** A delivery of a batch, entered in the stream and grouped in memory, before it joins. */
interface Decided {
  readonly entryId: string;
  readonly matches: (Entry & { readonly score: number })[];
  readonly best: Entry | undefined;
  readonly bestGroup: string;
  readonly bestFirst: readonly [string, string];
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
  connection.defineCommand('similarEnter', { numberOfKeys: 5, lua: ENTER });
  connection.defineCommand('similarJoin', { numberOfKeys: 4, lua: JOIN });
  /** The windows a join checks, as the script reads them: made again when the others' change. */
  let windowsRead: { elsewhere: readonly SimilarWindow[]; json: string } | undefined;
  const windowsJson = () => {
    const elsewhere = options.windowsElsewhere?.() ?? [];
    if (windowsRead?.elsewhere !== elsewhere) {
      const windows = distinctWindows([...options.windows, ...elsewhere]);
      windowsRead = {
        elsewhere,
        json: JSON.stringify(windows.map((w) => [w.atLeast, w.withinMs])),
      };
    }
    return windowsRead.json;
  };
  /** Least recently used first. */
  const projects = new Map<string, ProjectIndex>();
  /**
   * The deliveries waiting, per project with a turn under way. The turn is the project's, not
   * its index's: an index built again must not let a second catch-up run beside the first.
   */
  const waiting = new Map<string, Waiting[]>();

  const indexOf = (project: string): ProjectIndex => {
    const state = projects.get(project) ?? newIndex();
    projects.delete(project);
    projects.set(project, state);
    for (const idle of projects.keys()) {
      if (projects.size <= MOST_PROJECT_INDEXES) break;
      if (idle !== project && !waiting.has(idle)) projects.delete(idle);
    }
    return state;
  };

  /** The project's index, built again when it holds more than the stream keeps. */
  const boundedIndexOf = (project: string): ProjectIndex => {
    const state = indexOf(project);
    const oldest = state.entries[0];
    if (
      state.index.size > keep * (1 + INDEX_SLACK) ||
      (oldest !== undefined && oldest.at < now() - ttlMs * (1 + INDEX_SLACK))
    ) {
      // Built again from what the stream keeps: the index is bounded as the stream is.
      const fresh = newIndex();
      projects.set(project, fresh);
      return fresh;
    }
    return state;
  };

  /** The rest of a catch-up longer than "enter" reads back: after `after`, up to `newest`. */
  const readMore = async (keys: ProjectKeys, after: string, newest: string): Promise<Unread[]> => {
    const read = (await connection.xrangeBuffer(
      keys.docs,
      `(${after}`,
      newest,
      'COUNT',
      CATCH_UP_BATCH,
    )) as [Buffer, Buffer[]][];
    if (read.length === 0) return [];
    const entries = read.map(([id, fields]) => readEntry(id.toString(), fields));
    const stored = await readLines(
      connection,
      keys,
      entries.map((entry) => entry.key),
    );
    return entries.map((entry, i) => ({ ...entry, stored: stored[i] ?? '' }));
  };

  /**
   * Moves the entries the index holds that an operator detached to their new groups, and reads
   * the rest of the detaches when "enter" returned as many as it reads at most. An entry the
   * index has not read yet comes with its line, detached already.
   */
  const applyDetaches = async (state: ProjectIndex, keys: ProjectKeys, read: StreamEntry[]) => {
    for (let detaches = read; ;) {
      for (const [id, fields] of detaches) {
        const values = fieldsOf(fields);
        const ordinal = state.ordinalOf.get(values.get('e')?.toString() ?? '');
        const group = values.get('g')?.toString();
        if (ordinal !== undefined && group) {
          state.groups[ordinal] = group;
          const { key, recordId } = state.entries[ordinal]!;
          if (!state.firsts.has(group)) state.firsts.set(group, [key, recordId]);
        }
        state.lastDetach = id.toString();
      }
      if (detaches.length < CATCH_UP_BATCH) return;
      detaches = (await connection.xrangeBuffer(
        keys.detaches,
        `(${state.lastDetach}`,
        '+',
        'COUNT',
        CATCH_UP_BATCH,
      )) as StreamEntry[];
    }
  };

  /** Adds an entry read to the index, in stream order, with its group. */
  const addEntry = (state: ProjectIndex, entry: Unread, decided: Map<string, Decided>) => {
    const grouping = readStored(entry.stored, entry.key);
    // One of this batch takes the group chosen for it here, as its join will store it.
    const own = decided.get(entry.id);
    let group = grouping?.g ?? (own && (own.bestGroup || entry.id));
    let first =
      grouping?.f ?? (own?.best && own.bestFirst !== NO_FIRST ? own.bestFirst : undefined);
    if (group === undefined) {
      // As its own worker decides (below): the same matches, the same rule.
      const found = state.index.query(entry.document, DEFAULT_MATCH_LIMIT);
      group = chooseGroup(found, (match) => state.groups[match.ordinal]!, threshold) ?? entry.id;
    }
    first ??= [entry.key, entry.recordId];
    if (!state.firsts.has(group)) state.firsts.set(group, first);
    state.ordinalOf.set(entry.id, state.entries.length);
    state.entries.push({ id: entry.id, key: entry.key, recordId: entry.recordId, at: entry.at });
    state.groups.push(group);
    state.index.add(entry.id, entry.document);
    state.lastId = entry.id;
  };

  /** The matches and chosen group of a delivery whose entry is `entryId`, from the index. */
  const decide = (
    state: ProjectIndex,
    document: CompactDocument,
    entryId: string,
    oldestKept: string,
  ): Decided => {
    // The index may hold entries after this one (read for a later delivery, or one of another
    // batch): only those before it count, so the answer is the one every worker computes.
    // And only those the stream still keeps: the index lets go of the others a little later.
    const own = state.ordinalOf.get(entryId) ?? state.index.size;
    const kept = firstKept(state.entries, oldestKept);
    const found = state.index.query(document, DEFAULT_MATCH_LIMIT, { from: kept, before: own });
    // The group with the most evidence among the matches (grouping.ts), joined through its
    // best member here: the join script takes that member's group as stored.
    const groupOfMatch = (match: { ordinal: number }) => state.groups[match.ordinal]!;
    const joined = chooseGroup(found, groupOfMatch, threshold);
    const chosen =
      joined === undefined ? undefined : found.find((match) => groupOfMatch(match) === joined);
    const bestGroup = chosen ? state.groups[chosen.ordinal]! : '';
    return {
      entryId,
      matches: found.map((match) => ({ ...state.entries[match.ordinal]!, score: match.score })),
      best: chosen ? state.entries[chosen.ordinal]! : undefined,
      bestGroup,
      bestFirst: (chosen && state.firsts.get(bestGroup)) || NO_FIRST,
    };
  };

  /** Groups a batch of one project's deliveries, in order: see the header. */
  const groupBatch = async (
    project: string,
    deliveries: readonly Delivery[],
  ): Promise<(SimilarFacts | Promise<SimilarFacts>)[]> => {
    const keys = projectKeys(prefix, project);
    const state = boundedIndexOf(project);
    const rarity = batchRarity(state.index);
    const documents = deliveries.map(({ record }) => {
      const terms = recordTerms(record, DEFAULT_TERM_OPTIONS, true);
      const document = compactTerms(terms, rarity.of, MAX_TERMS, rarity.range());
      rarity.add(document);
      return document;
    });
    const [results, read, detaches] = await connection.similarEnterBuffer(
      keys.docs,
      keys.of,
      keys.groups,
      projectsKey(prefix),
      keys.detaches,
      keys.base,
      `${now() - ttlMs}-0`,
      keep,
      ttlMs,
      project,
      MOST_DROPPED_PER_ENTER,
      state.lastId,
      CATCH_UP_BATCH,
      state.lastDetach,
      ...deliveries.flatMap(({ key, record }, i) => [
        key,
        record.id,
        Buffer.from(encodeCompactDocument(documents[i]!)),
        key === keyOfRecord(record.id) ? '' : key,
      ]),
    );
    const entered = results.map((result) =>
      result.length === 2
        ? { joined: result[1].toString() }
        : { entryId: result[1].toString(), byCount: result[2], oldestKept: result[4].toString() },
    );
    const droppedByCount = entered.reduce((sum, e) => sum + (e.byCount ?? 0), 0);
    if (droppedByCount > 0) {
      logger.warn(
        { project, dropped: droppedByCount, keep },
        'similar: dropped the oldest deliveries of the project, past SIMILAR_KEEP',
      );
    }

    // The batch's own new entries come back as ids: each is read from its delivery, not decoded
    // again from the bytes this worker sent.
    const batchOrdinal = new Map(entered.map((e, i) => [e.entryId, i]));
    const unread: Unread[] = read.map((entry) => {
      const id = entry[0].toString();
      if (entry.length === 3) return { ...readEntry(id, entry[1]), stored: entry[2].toString() };
      const i = batchOrdinal.get(id)!;
      const { key, record } = deliveries[i]!;
      const [ms = 0] = streamIdParts(id);
      return { id, at: ms, key, recordId: record.id, document: documents[i]!, stored: '' };
    });
    const newest = entered.reduce<string | undefined>(
      (max, e) => (e.entryId && (!max || streamIdBefore(max, e.entryId)) ? e.entryId : max),
      undefined,
    );
    for (let more = read.length === CATCH_UP_BATCH; more && newest;) {
      const next = await readMore(keys, unread[unread.length - 1]!.id, newest);
      unread.push(...next);
      more = next.length === CATCH_UP_BATCH;
    }

    // The groups as they are now: an entry the index holds may have been detached since.
    await applyDetaches(state, keys, detaches);

    // In the batch's order, each against the entries before its own (its predecessors of the
    // batch included, with the groups chosen for them here), as one at a time would be.
    const decided = new Map<string, Decided>();
    let next = 0;
    const addBefore = (entryId: string | undefined) => {
      for (; next < unread.length; next += 1) {
        const entry = unread[next]!;
        if (entryId !== undefined && !streamIdBefore(entry.id, entryId)) return;
        addEntry(state, entry, decided);
      }
    };
    const decisions = entered.map((e, i) => {
      if (e.entryId === undefined) return undefined;
      addBefore(e.entryId);
      const decision = decide(state, documents[i]!, e.entryId, e.oldestKept);
      decided.set(e.entryId, decision);
      return decision;
    });
    addBefore(undefined);

    const joining = deliveries.flatMap((delivery, i) => {
      const decision = decisions[i];
      if (!decision) return [];
      const { entryId, matches, best, bestGroup, bestFirst } = decision;
      const at = Date.parse(delivery.receivedAt);
      return [
        delivery.key,
        entryId,
        Number.isFinite(at) ? at : now(),
        entryId,
        // Itself as its line keeps it when it starts its group (stored-grouping.ts).
        delivery.key === keyOfRecord(delivery.record.id)
          ? ''
          : encodeFirst([delivery.key, delivery.record.id]),
        best?.key ?? '',
        bestGroup,
        encodeFirst(bestFirst),
        encodeMatches(
          entryId,
          matches.map((match) => [match.id, Math.round(match.score * 1000)]),
        ),
      ];
    });
    const joined =
      joining.length === 0
        ? []
        : await connection.similarJoin(
            keys.of,
            keys.groups,
            keys.docs,
            keys.detaches,
            keys.base,
            ttlMs,
            windowsJson(),
            ...joining,
          );

    let j = 0;
    return entered.map((e, i) => {
      if (e.joined !== undefined) {
        return readFacts(connection, project, keys, readStored(e.joined, deliveries[i]!.key)!);
      }
      const stored = readStored(joined[j++], deliveries[i]!.key) as StoredGrouping;
      const decision = decisions[i]!;
      // The index takes the group as stored: the join reads the best match's, which an operator
      // may have detached after "enter".
      const ordinal = state.ordinalOf.get(stored.e);
      if (ordinal !== undefined) state.groups[ordinal] = stored.g;
      if (stored.e !== decision.entryId) return readFacts(connection, project, keys, stored);
      return {
        group: {
          id: groupIdOf(project, stored.g),
          size: stored.s,
          first: { key: stored.f[0], recordId: stored.f[1] },
        },
        matches: decision.matches.map(({ key, recordId, score }) => ({ key, recordId, score })),
        crossed: stored.c.map(([atLeast, withinMs]) => ({ atLeast, withinMs })),
      };
    });
  };

  /** Groups the waiting deliveries of a project, a batch at a time, until none waits. */
  const takeTurns = async (project: string, queue: Waiting[]) => {
    while (queue.length > 0) {
      const batch = queue.splice(0, MOST_PER_BATCH);
      try {
        const facts = await groupBatch(
          project,
          batch.map((w) => w.delivery),
        );
        batch.forEach((w, i) => w.resolve(facts[i]!));
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    waiting.delete(project);
  };

  const group = (delivery: Delivery): Promise<SimilarFacts> =>
    new Promise((resolve, reject) => {
      const record = delivery.record;
      const project = projectOf(record);
      const queue = waiting.get(project);
      if (queue) {
        queue.push({ delivery, resolve, reject });
        return;
      }
      const started = [{ delivery, resolve, reject }];
      waiting.set(project, started);
      void takeTurns(project, started);
    });

  return { group };
}

/**
 * The rarity a term is chosen by once the batch's documents before it are added, so a batch
 * keeps the terms one at a time would: see choice-rarity.ts.
 */
function batchRarity(index: SimilarityIndex) {
  const added = new Map<number, number>();
  let documents = 0;
  return {
    of: (hash: number) =>
      choiceRarity(index.size + documents, index.documentFrequency(hash) + (added.get(hash) ?? 0)),
    range: () => choiceRarityRange(index.size + documents),
    add(document: CompactDocument) {
      documents += 1;
      for (const hash of document.hashes) added.set(hash, (added.get(hash) ?? 0) + 1);
    },
  };
}

function newIndex(): ProjectIndex {
  return {
    index: new SimilarityIndex(),
    entries: [],
    groups: [],
    firsts: new Map(),
    ordinalOf: new Map(),
    lastId: '',
    lastDetach: '',
  };
}

function readEntry(
  id: string,
  fields: Buffer[],
): EntryFields & { id: string; at: number; document: CompactDocument } {
  const values = fieldsOf(fields);
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
    document,
  };
}

/** A stream entry's fields by name. */
function fieldsOf(fields: Buffer[]): Map<string, Buffer> {
  const values = new Map<string, Buffer>();
  for (let i = 0; i + 1 < fields.length; i += 2) values.set(fields[i]!.toString(), fields[i + 1]!);
  return values;
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
  const [am, as] = streamIdParts(a);
  const [bm, bs] = streamIdParts(b);
  return am < bm || (am === bm && as < bs);
}

/** A stream id's ms and sequence number. */
function streamIdParts(id: string): [number, number] {
  const dash = id.indexOf('-');
  if (dash === -1) return [Number(id), 0];
  return [Number(id.slice(0, dash)), Number(id.slice(dash + 1))];
}

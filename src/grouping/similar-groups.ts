/**
 * What the console reads of grouping (docs/similar.md): the groups of a time window, one group
 * with its deliveries, one delivery's group and matches, and the operator's one write, taking a
 * delivery out of its group. Every read is bounded: a page of groups, a page of deliveries. The
 * titles shown are the delivery history's (grouping keeps none), read once per page for all.
 */
import { createHistorySearch } from '../history/history-search.js';
import type { Logger } from '../logger.js';
import { pipelineResults, type RedisConnection } from '../queue/redis.js';
import type { ShownSimilarFacts, SimilarFacts } from '../similar/similar-facts.js';
import { firstNow, firstNowGiven } from './group-first.js';
import { groupingScript } from './grouping-script.js';
import {
  keyOfMember,
  readEntries,
  readFacts,
  readLines,
  readShownFacts,
  titlesOf,
  type ReadEntry,
} from './read-facts.js';
import {
  firstEntryOf,
  groupIdOf,
  groupMembersKey,
  lineField,
  projectKeys,
  projectsKey,
  readGroupId,
  type ProjectKeys,
} from './similar-keys.js';
import { readStored } from './stored-grouping.js';

const DETACH = groupingScript('similar-detach.lua');

/** Width of one bar of a group's `arrivals` chart: the window is cut into this many buckets. */
export const ARRIVAL_BUCKETS = 24;

/** Most groups `list` returns. */
export const MOST_LISTED_GROUPS = 200;

/**
 * Projects looked through, the most recently active first: for a delivery whose project is not
 * given, and for the groups of every project. Beyond it, the reader says it left some out.
 */
export const MOST_PROJECTS_SEARCHED = 1_000;

/**
 * Groups `list` weighs per group it returns: the most recently active of the window, shared
 * among the projects. Weighing a group is two counts; only the chosen are read in detail, so a
 * list costs in proportion to its limit, however many groups the window holds.
 */
export const GROUPS_WEIGHED_PER_LISTED = 10;

/** Members of a group read to count its arrivals over a window; beyond it, the newest are. */
export const MOST_ARRIVALS_COUNTED = 1_000;

/** Most deliveries `get` returns of a group, newest first. */
export const MOST_GROUP_DELIVERIES = 200;

/** A delivery of a group, as the console shows it. */
export interface GroupDelivery {
  readonly key: string;
  readonly recordId: string;
  /** From the delivery history; '' once its entry there is gone. */
  readonly title: string;
  /** Arrival, ms since the epoch. */
  readonly at: number;
}

export interface SimilarGroupSummary {
  /** URL-safe and stable: made of the project and the group's first delivery's key. */
  readonly id: string;
  readonly project: string;
  /** Deliveries in the group, each counted once. */
  readonly size: number;
  readonly first: GroupDelivery;
  /** The last arrival, ms since the epoch. */
  readonly lastAt: number;
  /**
   * Arrivals per bucket over the asked window, oldest bucket first: ARRIVAL_BUCKETS buckets of
   * (now - sinceMs) / ARRIVAL_BUCKETS each. `get` counts over the last 24 hours.
   */
  readonly arrivals: readonly number[];
}

export interface SimilarGroupDetail extends SimilarGroupSummary {
  /** Newest first, at most MOST_GROUP_DELIVERIES. */
  readonly deliveries: readonly GroupDelivery[];
}

export interface ListGroupsQuery {
  /** Groups whose last arrival is after this (ms since the epoch). */
  readonly sinceMs: number;
  /** Only this project's groups. */
  readonly project?: string | undefined;
  /** Most groups returned; capped at MOST_LISTED_GROUPS. */
  readonly limit?: number | undefined;
  /**
   * Which come first, and which are chosen: the fastest-growing (arrivals in the window, then
   * size: the console's) or the largest (size, then the last arrival: the CLI's). Either is
   * chosen among the same groups weighed (GROUPS_WEIGHED_PER_LISTED). Default: fastest-growing.
   */
  readonly order?: 'fastest-growing' | 'largest' | undefined;
}

export type DetachOutcome = 'detached' | 'alone' | 'not-found';

export interface SimilarGroups {
  /** Groups active since `sinceMs`, fastest-growing first (arrivals in the window, then size). */
  list(query: ListGroupsQuery): Promise<SimilarGroupSummary[]>;
  /**
   * How many groups of two or more had a delivery since `sinceMs` (at most MOST_PROJECTS_SEARCHED
   * projects' when no project is given): a count per project, however many groups there are.
   */
  count(query: Omit<ListGroupsQuery, 'limit' | 'order'>): Promise<number>;
  /**
   * When grouping last took in a delivery (of `project`, when given), ms since the epoch;
   * undefined when it holds none within DEDUPE_TTL_SECONDS: no worker groups (SIMILAR off), or
   * none has had a delivery since. Says why a list is empty.
   */
  lastGroupedAt(project?: string): Promise<number | undefined>;
  /** One group and its newest deliveries; undefined when there is no such group. */
  get(id: string): Promise<SimilarGroupDetail | undefined>;
  /**
   * What grouping told the delivery's handlers (the group's size as it is now), its matches with
   * their titles; undefined when it was not grouped (or is gone). `project` (the record's
   * project_id) saves looking through the projects (at most MOST_PROJECTS_SEARCHED).
   */
  ofDelivery(key: string, project?: string): Promise<ShownSimilarFacts | undefined>;
  /**
   * The facts as its runs saw them at its routing (the group's size when it joined, and the
   * windows its arrival crossed), for a run an operator adds later: the same facts, not a new
   * crossing. Undefined as for `ofDelivery`.
   */
  asRouted(key: string, project?: string): Promise<SimilarFacts | undefined>;
  /**
   * The facts a run of the delivery sees when it starts, its first attempt too (it may have
   * waited in its queue for a while): `routed`, the facts its runs were added with (the group's
   * size when it joined, and the windows its arrival crossed, so a crossing fires once), with
   * the group's first as it is now, not one an operator has taken out since. Once the operator
   * has taken the delivery itself out, its facts as `asRouted` reads them: a group of its own,
   * nothing crossed. `routed` as it is when grouping no longer knows the delivery. One read of
   * two lines (the delivery's and its first's); more only after a detach.
   */
  whenRunning(key: string, project: string, routed: SimilarFacts): Promise<SimilarFacts>;
  /**
   * Takes the delivery out of its group: it becomes a group of its own, and stays one when its
   * routing runs again. 'alone' when it already was; 'not-found' when grouping does not know it.
   */
  detach(key: string, project?: string): Promise<DetachOutcome>;
}

export interface SimilarGroupsOptions {
  /** The console's connection: grouping's keys and the delivery history (titles) are read on it. */
  readonly connection: RedisConnection;
  readonly prefix: string;
  /** DEDUPE_TTL_SECONDS: how long a detached group is kept, and the history's days. */
  readonly ttlSeconds: number;
  /** Where the reader says it left projects or groups out. */
  readonly logger?: Logger | undefined;
  /** The clock, for tests. */
  readonly now?: () => number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

type Scripted = RedisConnection & {
  similarDetach(...args: string[]): Promise<DetachOutcome>;
};

/** A group as `summaries` weighs it, before its first's title is read (with the others'). */
type Weighed = SimilarGroupSummary & { inWindow: number; firstEntry: ReadEntry | undefined };

export function createSimilarGroups(options: SimilarGroupsOptions): SimilarGroups {
  const { prefix } = options;
  const now = options.now ?? Date.now;
  const connection = options.connection as Scripted;
  connection.defineCommand('similarDetach', { numberOfKeys: 4, lua: DETACH });
  const history = createHistorySearch({ connection, prefix, ttlSeconds: options.ttlSeconds, now });

  /** The projects active since `sinceMs` (and within the ttl), the most recently active first. */
  const activeProjects = async (sinceMs: number): Promise<string[]> => {
    const from = Math.max(sinceMs, now() - options.ttlSeconds * 1000);
    const projects = await connection.zrevrangebyscore(
      projectsKey(prefix),
      '+inf',
      `(${from}`,
      'LIMIT',
      0,
      MOST_PROJECTS_SEARCHED + 1,
    );
    if (projects.length <= MOST_PROJECTS_SEARCHED) return projects;
    options.logger?.warn(
      { most: MOST_PROJECTS_SEARCHED },
      'similar: more projects are active than the console looks through; the least recently active are left out',
    );
    return projects.slice(0, MOST_PROJECTS_SEARCHED);
  };

  /** The projects to look through for a delivery, and its stored grouping in the first. */
  const find = async (key: string, project: string | undefined) => {
    const projects = project !== undefined ? [project] : await activeProjects(-Infinity);
    if (projects.length === 0) return undefined;
    const pipeline = connection.pipeline();
    // Under its field, or (a line written before this version) under its key: lineField.
    for (const name of projects) {
      pipeline.hget(projectKeys(prefix, name).of, lineField(key));
      pipeline.hget(projectKeys(prefix, name).of, key);
    }
    const answers = pipelineResults(await pipeline.exec());
    for (const [i, value] of answers.entries()) {
      if (typeof value === 'string') return { project: projects[i >> 1]!, value };
    }
    return undefined;
  };

  /**
   * A group of one is not in the project's groups (similar-join.lua): it is one while its first
   * delivery's line names it. Its arrival, the group's last; null for no such group.
   */
  const aloneSince = async (keys: ProjectKeys, group: string): Promise<number | null> => {
    const [first] = await readEntries(connection, keys, [firstEntryOf(group)]);
    if (!first) return null;
    const [line] = await readLines(connection, keys, [first.key]);
    const stored = readStored(line, first.key);
    return stored?.g === group ? stored.t : null;
  };

  const summaries = async (
    project: string,
    found: readonly { group: string; lastAt: number }[],
    sinceMs: number,
    untilMs: number,
  ): Promise<Weighed[]> => {
    if (found.length === 0) return [];
    const keys = projectKeys(prefix, project);
    const pipeline = connection.pipeline();
    for (const { group } of found) {
      const members = groupMembersKey(keys, group);
      pipeline.zcard(members);
      pipeline.zcount(members, `(${sinceMs}`, '+inf');
      pipeline.zrevrangebyscore(
        members,
        '+inf',
        `(${sinceMs}`,
        'WITHSCORES',
        'LIMIT',
        0,
        MOST_ARRIVALS_COUNTED,
      );
      pipeline.zrangebyscore(members, '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, 1);
    }
    const answers = pipelineResults(await pipeline.exec());
    // A group's id within its project is its first delivery's entry id.
    const firstEntries = await readEntries(
      connection,
      keys,
      found.map(({ group }) => firstEntryOf(group)),
    );
    // A first whose entry is gone (past the age or the count): the oldest member kept stands
    // for it. A first's line is under its field or its key (lineField); a member is either.
    const oldestMembers = found.map((_, i) => (answers[i * 4 + 3] as string[])[0] ?? '');
    const lines = await connection.hmget(
      keys.of,
      ...found.flatMap((_, i) => {
        const key = firstEntries[i]?.key;
        return key === undefined ? [oldestMembers[i]!, oldestMembers[i]!] : [lineField(key), key];
      }),
    );
    const firstLines = found.map((_, i) => lines[2 * i] ?? lines[2 * i + 1] ?? null);
    const firstKeys = found.map(
      (_, i) => firstEntries[i]?.key ?? keyOfMember(oldestMembers[i]!, firstLines[i]),
    );
    const stored = firstLines.map((value, i) => readStored(value, firstKeys[i]!));
    // A first an operator took out (its line names another group: similar-detach.lua) stands
    // for the group no more: the earliest member left does, as for a first whose entry is gone.
    const takenOut = found.flatMap(({ group }, i) =>
      firstEntries[i] !== undefined && stored[i] !== undefined && stored[i].g !== group ? [i] : [],
    );
    if (takenOut.length > 0) {
      const left = await connection.hmget(keys.of, ...takenOut.map((i) => oldestMembers[i]!));
      for (const [j, i] of takenOut.entries()) {
        firstEntries[i] = undefined;
        firstKeys[i] = keyOfMember(oldestMembers[i]!, left[j]);
        stored[i] = readStored(left[j], firstKeys[i]);
      }
    }
    const standIns = firstEntries.some((entry) => entry === undefined)
      ? await readEntries(
          connection,
          keys,
          stored.map((value, i) => (firstEntries[i] ? '0-0' : (value?.e ?? '0-0'))),
        )
      : [];
    const bucketMs = Math.max(1, (untilMs - sinceMs) / ARRIVAL_BUCKETS);
    return found.map(({ group, lastAt }, i) => {
      const arrivals = new Array<number>(ARRIVAL_BUCKETS).fill(0);
      // No members key: a group of one (similar-join.lua), its first, arrived as it stored.
      const alone = Number(answers[i * 4]) === 0 && firstEntries[i] !== undefined;
      const firstAt = stored[i]?.t ?? lastAt;
      const scored = alone
        ? firstAt > sinceMs
          ? [firstKeys[i]!, String(firstAt)]
          : []
        : (answers[i * 4 + 2] as string[]);
      for (let s = 1; s < scored.length; s += 2) {
        const bucket = Math.floor((Number(scored[s]) - sinceMs) / bucketMs);
        const at = Math.min(ARRIVAL_BUCKETS - 1, Math.max(0, bucket));
        arrivals[at] = (arrivals[at] ?? 0) + 1;
      }
      const entry = firstEntries[i] ?? standIns[i];
      const oldest = answers[i * 4 + 3] as string[];
      return {
        id: groupIdOf(project, group),
        project,
        size: alone ? 1 : Number(answers[i * 4]),
        first: {
          key: firstKeys[i]!,
          recordId: entry?.recordId ?? '',
          title: '',
          at: stored[i]?.t ?? Number(oldest[1] ?? 0),
        },
        lastAt,
        arrivals,
        inWindow: alone ? scored.length / 2 : Number(answers[i * 4 + 1]),
        firstEntry: entry,
      };
    });
  };

  return {
    async lastGroupedAt(project) {
      // The active projects' scores are their last entries' times (similar-enter.lua).
      const from = now() - options.ttlSeconds * 1000;
      const last =
        project !== undefined
          ? await connection.zscore(projectsKey(prefix), project)
          : (
              await connection.zrevrangebyscore(
                projectsKey(prefix),
                '+inf',
                '-inf',
                'WITHSCORES',
                'LIMIT',
                0,
                1,
              )
            )[1];
      const at = last == null ? NaN : Number(last);
      return at > from ? at : undefined;
    },

    async count({ sinceMs, project }) {
      const projects = project !== undefined ? [project] : await activeProjects(sinceMs);
      if (projects.length === 0) return 0;
      const counting = connection.pipeline();
      for (const name of projects)
        counting.zcount(projectKeys(prefix, name).groups, `(${sinceMs}`, '+inf');
      return pipelineResults(await counting.exec())
        .map(Number)
        .reduce((sum, n) => sum + n, 0);
    },

    async list({ sinceMs, project, limit = MOST_LISTED_GROUPS, order = 'fastest-growing' }) {
      const most = Math.max(0, Math.min(limit, MOST_LISTED_GROUPS));
      if (most === 0) return [];
      const first = order === 'largest' ? largest : fastestGrowing;
      const projects = project !== undefined ? [project] : await activeProjects(sinceMs);
      if (projects.length === 0) return [];
      // Choose first: each project's groups of the window are counted, and the most recently
      // active of them read, no more than the list's share; each is weighed by two counts.
      const groupsKeys = projects.map((name) => projectKeys(prefix, name).groups);
      const counting = connection.pipeline();
      for (const key of groupsKeys) counting.zcount(key, `(${sinceMs}`, '+inf');
      const counts = pipelineResults(await counting.exec()).map(Number);
      const shares = shareOut(counts, most * GROUPS_WEIGHED_PER_LISTED);
      const reading = connection.pipeline();
      for (const [p, key] of groupsKeys.entries()) {
        if (shares[p]! > 0) {
          reading.zrevrangebyscore(
            key,
            '+inf',
            `(${sinceMs}`,
            'WITHSCORES',
            'LIMIT',
            0,
            shares[p]!,
          );
        }
      }
      const read = pipelineResults(await reading.exec()) as string[][];
      const candidates: { project: string; group: string; lastAt: number }[] = [];
      let answer = 0;
      for (const [p, name] of projects.entries()) {
        if (shares[p]! === 0) continue;
        const scored = read[answer++]!;
        for (let i = 0; i + 1 < scored.length; i += 2) {
          candidates.push({ project: name, group: scored[i]!, lastAt: Number(scored[i + 1]) });
        }
      }
      const total = counts.reduce((sum, count) => sum + count, 0);
      if (total > candidates.length) {
        // Info, not a warning: a busy window reaches this on every page view, by design.
        options.logger?.info(
          { groups: total, weighed: candidates.length },
          'similar: the groups list weighed the most recently active groups of the window only',
        );
      }
      const weighing = connection.pipeline();
      for (const { project: name, group } of candidates) {
        const members = groupMembersKey(projectKeys(prefix, name), group);
        weighing.zcount(members, `(${sinceMs}`, '+inf');
        weighing.zcard(members);
      }
      const weights = pipelineResults(await weighing.exec()).map(Number);
      // No members key: a group of one (similar-join.lua), whose one arrival, its last, is in
      // the window (the candidates' last arrivals are).
      const chosen = candidates
        .map((candidate, i) => ({
          ...candidate,
          id: groupIdOf(candidate.project, candidate.group),
          inWindow: weights[i * 2 + 1]! === 0 ? 1 : weights[i * 2]!,
          size: weights[i * 2 + 1]! || 1,
        }))
        .sort(first)
        .slice(0, most);
      // Then detail, the chosen only.
      const untilMs = now();
      const byProject = new Map<string, { group: string; lastAt: number }[]>();
      for (const { project: name, group, lastAt } of chosen) {
        byProject.set(name, [...(byProject.get(name) ?? []), { group, lastAt }]);
      }
      const detailed = (
        await Promise.all(
          [...byProject].map(([name, found]) => summaries(name, found, sinceMs, untilMs)),
        )
      ).flat();
      detailed.sort(first);
      const titles = await titlesOf(
        history,
        detailed.map(({ firstEntry }) => firstEntry),
      );
      return detailed.map((weighed, i) => shown(weighed, titles[i]!));
    },

    async get(id) {
      const parsed = readGroupId(id);
      if (!parsed) return undefined;
      const keys = projectKeys(prefix, parsed.project);
      const lastAt =
        (await connection.zscore(keys.groups, parsed.group)) ??
        (await aloneSince(keys, parsed.group));
      if (lastAt === null) return undefined;
      const untilMs = now();
      const [summary] = await summaries(
        parsed.project,
        [{ group: parsed.group, lastAt: Number(lastAt) }],
        untilMs - DAY_MS,
        untilMs,
      );
      const scored = await connection.zrevrange(
        groupMembersKey(keys, parsed.group),
        0,
        MOST_GROUP_DELIVERIES - 1,
        'WITHSCORES',
      );
      // Each member is a line field (lineField), or a key for one written before this version.
      const fields: string[] = [];
      const at: number[] = [];
      for (let i = 0; i + 1 < scored.length; i += 2) {
        fields.push(scored[i]!);
        at.push(Number(scored[i + 1]));
      }
      const lines = fields.length === 0 ? [] : await connection.hmget(keys.of, ...fields);
      const members = fields.map((field, i) => ({
        key: keyOfMember(field, lines[i]),
        at: at[i]!,
      }));
      // No members key: a group of one (similar-join.lua), its first.
      if (members.length === 0 && summary!.size === 1) {
        members.push({ key: summary!.first.key, at: summary!.first.at });
        lines.push(...(await readLines(connection, keys, [summary!.first.key])));
      }
      const entries = await readEntries(
        connection,
        keys,
        lines.map((value, i) => readStored(value, members[i]!.key)?.e ?? '0-0'),
      );
      const [firstTitle, ...titles] = await titlesOf(history, [summary!.firstEntry, ...entries]);
      return {
        ...shown(summary!, firstTitle!),
        deliveries: members.map(({ key, at }, i) => ({
          key,
          at,
          recordId: entries[i]?.recordId ?? '',
          title: titles[i]!,
        })),
      };
    },

    async ofDelivery(key, project) {
      const found = await find(key, project);
      const stored = readStored(found?.value, key);
      if (!found || !stored) return undefined;
      const keys = projectKeys(prefix, found.project);
      // No members key: a group of one (similar-join.lua), this delivery.
      const size = (await connection.zcard(groupMembersKey(keys, stored.g))) || 1;
      const now = { ...stored, f: await firstNow(connection, keys, stored.g, stored.f) };
      return readShownFacts(history, connection, found.project, keys, now, size);
    },

    async asRouted(key, project) {
      const found = await find(key, project);
      const stored = readStored(found?.value, key);
      if (!found || !stored) return undefined;
      const keys = projectKeys(prefix, found.project);
      // The first as it is now: not one the operator has taken out since (group-first.ts).
      const now = { ...stored, f: await firstNow(connection, keys, stored.g, stored.f) };
      return readFacts(connection, found.project, keys, now);
    },

    async whenRunning(key, project, routed) {
      const keys = projectKeys(prefix, project);
      const { first } = routed.group;
      const [line, firstLine] = await readLines(connection, keys, [key, first.key]);
      const stored = readStored(line, key);
      if (!stored) return routed;
      if (groupIdOf(project, stored.g) !== routed.group.id) {
        // Taken out of its group since it was routed: as detached.
        const now = { ...stored, f: await firstNow(connection, keys, stored.g, stored.f) };
        return readFacts(connection, project, keys, now);
      }
      const [firstKey, recordId] = await firstNowGiven(
        connection,
        keys,
        stored.g,
        [first.key, first.recordId],
        firstLine ?? null,
      );
      return firstKey === first.key
        ? routed
        : { ...routed, group: { ...routed.group, first: { key: firstKey, recordId } } };
    },

    async detach(key, project) {
      const found = await find(key, project);
      if (!found) return 'not-found';
      const keys = projectKeys(prefix, found.project);
      const ttlMs = options.ttlSeconds * 1000;
      return connection.similarDetach(
        keys.of,
        keys.groups,
        keys.docs,
        keys.detaches,
        keys.base,
        key,
        String(ttlMs),
        `${now() - ttlMs}-0`,
      );
    },
  };
}

/** A group weighed, as the console shows it: its first's title in. */
function shown(
  { inWindow: _, firstEntry: __, ...summary }: Weighed,
  title: string,
): SimilarGroupSummary {
  return { ...summary, first: { ...summary.first, title } };
}

/** Arrivals in the window, then size, then the last arrival; ties by id, so the order is one. */
/** The largest first: size, then the last arrival, then the id (a stable order). */
function largest(
  a: { size: number; lastAt: number; id: string },
  b: { size: number; lastAt: number; id: string },
): number {
  return b.size - a.size || b.lastAt - a.lastAt || (a.id < b.id ? -1 : 1);
}

function fastestGrowing(
  a: { inWindow: number; size: number; lastAt: number; id: string },
  b: { inWindow: number; size: number; lastAt: number; id: string },
): number {
  return (
    b.inWindow - a.inWindow || b.size - a.size || b.lastAt - a.lastAt || (a.id < b.id ? -1 : 1)
  );
}

/**
 * `budget` shared among wants (`counts`) so none gets more than it wants and what one does not
 * need goes to the others: the smallest wants are met first, each of the rest gets an even share
 * (what is left by rounding goes to the first wants, the most recently active projects).
 */
export function shareOut(counts: readonly number[], budget: number): number[] {
  const shares = new Array<number>(counts.length).fill(0);
  const order = counts.map((_, i) => i).sort((a, b) => counts[a]! - counts[b]! || b - a);
  let left = budget;
  for (const [k, i] of order.entries()) {
    const share = Math.min(counts[i]!, Math.floor(left / (order.length - k)));
    shares[i] = share;
    left -= share;
  }
  return shares;
}

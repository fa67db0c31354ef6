/**
 * The invariant checked at the end of every scenario: every delivery that got a 2xx was handled
 * exactly once by each matching handler, or sits in the dead letter or the quarantine with a
 * reason. Nothing else. Also counts what the report shows.
 */
import { expect, vi } from 'vitest';
import type { Cluster as AnyCluster } from './cluster.js';
import type { RedisUnderTest } from '../../helpers/redis-topologies.js';

type Cluster = AnyCluster<RedisUnderTest>;

export interface Tally {
  readonly sent: number;
  readonly acknowledged: number;
  readonly handled: number;
  readonly deadLetter: number;
  readonly quarantined: number;
  readonly lost: number;
  readonly handledTwice: number;
}

export interface SettleOptions {
  readonly timeoutMs?: number;
  /** The key of every effect a handler had, once per effect. Default: the probe handler's. */
  readonly effects?: () => readonly string[];
}

const UNFINISHED = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;

/**
 * Waits until both queues hold nothing unfinished, so no run can still come, and every
 * acknowledged key is handled or dead-lettered.
 */
export async function settle(
  cluster: Cluster,
  acknowledged: ReadonlySet<string>,
  { timeoutMs = 60_000, effects = cluster.effects }: SettleOptions = {},
): Promise<void> {
  // Throws (and so waits on) while Redis is still on its way back, too.
  const settled = vi.waitFor(
    async () => {
      const counts = await Promise.all(
        (await everyQueue(cluster)).map((queue) => queue.getJobCounts(...UNFINISHED)),
      );
      expect(counts, 'jobs not finished yet').toEqual(
        counts.map(() => Object.fromEntries(UNFINISHED.map((state) => [state, 0]))),
      );
      const done = new Set([...effects(), ...(await deadLetterKeys(cluster))]);
      const missing = [...acknowledged].filter((key) => !done.has(key));
      expect(missing, 'acknowledged deliveries neither handled nor dead-lettered').toEqual([]);
    },
    { timeout: timeoutMs, interval: 100 },
  );
  await settled.catch(async (error: Error) => {
    throw new Error(`${error.message}\nunfinished jobs: ${await describeUnfinished(cluster)}`, {
      cause: error,
    });
  });
}

/** What a failed settle leaves behind, so a red run says which jobs and how long they sat. */
async function describeUnfinished(cluster: Cluster): Promise<string> {
  const now = Date.now();
  const jobs = await Promise.all(
    (await everyQueue(cluster)).map((queue) => queue.getJobs([...UNFINISHED], 0, 9)),
  ).catch((error: Error) => error);
  if (jobs instanceof Error) return `(could not read them: ${jobs.message})`;
  const described = jobs.flat().map((job) => ({
    queue: job.queueName,
    id: job.id,
    name: job.name,
    attemptsStarted: job.attemptsStarted,
    attemptsMade: job.attemptsMade,
    sinceProcessedMs: job.processedOn ? now - job.processedOn : null,
    stalledCounter: job.stalledCounter,
  }));
  return JSON.stringify(described);
}

export async function tally(
  cluster: Cluster,
  sent: ReadonlySet<string>,
  acknowledged: ReadonlySet<string>,
  { quarantined = 0, effects: effectKeys = cluster.effects() } = {},
): Promise<Tally> {
  const effects = new Map<string, number>();
  for (const key of effectKeys) effects.set(key, (effects.get(key) ?? 0) + 1);
  const dead = new Set(await deadLetterKeys(cluster));
  const handled = [...acknowledged].filter((key) => effects.has(key)).length;
  const deadLetter = [...acknowledged].filter((key) => !effects.has(key) && dead.has(key)).length;
  return {
    sent: sent.size,
    acknowledged: acknowledged.size + quarantined,
    handled,
    deadLetter,
    quarantined,
    lost: acknowledged.size - handled - deadLetter,
    handledTwice: [...effects.values()].filter((count) => count > 1).length,
  };
}

export function expectInvariant(result: Tally): void {
  expect(result.lost, 'acknowledged deliveries lost').toBe(0);
  expect(result.handledTwice, 'deliveries handled twice').toBe(0);
  expect(result.handled + result.deadLetter + result.quarantined).toBe(result.acknowledged);
}

async function deadLetterKeys(cluster: Cluster): Promise<string[]> {
  const failed = (
    await Promise.all((await cluster.runQueues.all()).map((queue) => queue.getFailed(0, -1)))
  ).flat();
  return failed.map((job) => (job.data as { delivery: { key: string } }).delivery.key);
}

/** The deliveries queue and every handler's runs queue (an outage makes the roster's read throw). */
async function everyQueue(cluster: Cluster) {
  return [cluster.deliveries, ...(await cluster.runQueues.all())];
}

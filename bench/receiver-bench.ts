/**
 * The receiver's full path (verify, validate, dedupe, enqueue, answer), as `feedback-receiver
 * serve` runs it, against a bare Express route, a bare node:http server and a naive receiver, at
 * several concurrencies, and against the work alone (the naive receiver without Redis) at one.
 * Rounds alternate between the targets, so a drift in the machine's speed touches them alike;
 * Redis is emptied before every round of a target that writes to it.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { freePort } from '../src/cli/free-port.js';
import type { LoadResult, LoadSettings } from './load-client.js';
import type { Pinning } from './pinning.js';
import {
  cpuMicros,
  here,
  rssMiB,
  runJsonProcess,
  startReceiverUnderTest,
  startServer,
  type Server,
} from './processes.js';

export const TARGETS = [
  'node:http',
  'bare Express',
  'work alone',
  'naive receiver',
  'full path',
] as const;
export type Target = (typeof TARGETS)[number];

export interface ReceiverBenchOptions {
  readonly redis: Redis;
  readonly redisUrl: string;
  /** The redis-server's pid, for its CPU time per request. */
  readonly redisPid: number | undefined;
  readonly pinning: Pinning;
  readonly concurrencies: readonly number[];
  /** The one concurrency at which 'work alone' is measured too (it is a ceiling, not a rival). */
  readonly workAloneAt: number;
  /** Rounds at `workAloneAt`, the headline concurrency. */
  readonly rounds: number;
  /** Rounds at the other concurrencies, which set the scene: fewer, to keep the run short. */
  readonly otherRounds: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
}

/** One round's load result, and the server's and Redis's CPU time per answered request. */
export interface RoundResult extends LoadResult {
  readonly serverCpuMicrosPerRequest: number;
  readonly redisCpuMicrosPerRequest: number;
}

export interface ReceiverBenchResult {
  /** By concurrency, then target: one result per round. */
  readonly rounds: Map<number, Map<Target, RoundResult[]>>;
  /** Paired rounds at `workAloneAt`: the full path's req/s over the naive receiver's, per round. */
  readonly pairedRatios: readonly number[];
  readonly memory: {
    readonly rssBeforeMiB: number;
    readonly rssAfterMiB: number;
    readonly sustainedSeconds: number;
    readonly redisBytesPerDelivery: number;
    readonly deliveriesMeasured: number;
  };
}

const SECRET = 'bench-secret-0123456789abcdef';
const PREFIX = 'bench';
const LOAD_CLIENT = here('./load-client.js');
const BASELINE = here('./baseline-server.js');

export async function benchReceiver(options: ReceiverBenchOptions): Promise<ReceiverBenchResult> {
  const { redis } = options;
  const servers = new Map<Target, Server>();
  try {
    for (const target of TARGETS) servers.set(target, await startTarget(target, options));
    const fullPath = servers.get('full path')!;
    const rssBeforeMiB = rssMiB(fullPath.child.pid);
    let sustainedSeconds = 0;

    const settingsFor = (target: Target, connections: number, seconds: number): LoadSettings => ({
      url: `${servers.get(target)!.url}/webhooks/feedback`,
      connections,
      seconds,
      secret: SECRET,
      runId: randomUUID().slice(0, 8),
    });
    const load = async (
      target: Target,
      connections: number,
      seconds: number,
    ): Promise<RoundResult> => {
      if (target === 'full path' || target === 'naive receiver') {
        await redis.flushall();
        sustainedSeconds += seconds;
      }
      const settings = settingsFor(target, connections, seconds);
      const pid = servers.get(target)!.child.pid;
      const cpuBefore = cpuMicros(pid);
      const redisCpuBefore = cpuMicros(options.redisPid);
      const result = await runJsonProcess<LoadResult>(options.pinning, LOAD_CLIENT, settings);
      const answered = result.ok + result.notOk;
      const serverCpuMicrosPerRequest = (cpuMicros(pid) - cpuBefore) / answered;
      const redisCpuMicrosPerRequest = (cpuMicros(options.redisPid) - redisCpuBefore) / answered;
      if (result.notOk > 0 || result.errors > 0) {
        throw new Error(
          `${target} at ${connections}: ${result.notOk} non-2xx answers, ${result.errors} errors`,
        );
      }
      return { ...result, serverCpuMicrosPerRequest, redisCpuMicrosPerRequest };
    };

    const rounds = new Map<number, Map<Target, RoundResult[]>>();
    for (const connections of options.concurrencies) {
      const targets = TARGETS.filter(
        (target) => target !== 'work alone' || connections === options.workAloneAt,
      );
      const byTarget = new Map<Target, RoundResult[]>(targets.map((target) => [target, []]));
      for (const target of targets) await load(target, connections, options.warmupSeconds);
      const roundsHere = connections === options.workAloneAt ? options.rounds : options.otherRounds;
      for (let round = 0; round < roundsHere; round += 1) {
        for (const target of targets) {
          const result = await load(target, connections, options.seconds);
          byTarget.get(target)!.push(result);
          progress(`receiver  c=${connections}  ${target.padEnd(12)} round ${round + 1}`, result);
        }
      }
      rounds.set(connections, byTarget);
    }

    // Paired rounds: the naive receiver and the full path loaded at the same time, both on the
    // server's core. Whatever slows the machine in a round (CPU steal, a noisy neighbour) slows
    // both alike, so the ratio holds still where the alternating rounds above swing by 15–30%.
    const pairedRatios: number[] = [];
    const paired: Target[] = ['naive receiver', 'full path'];
    for (let round = 0; round < options.rounds; round += 1) {
      await redis.flushall();
      const [naive, full] = await Promise.all(
        paired.map((target) =>
          runJsonProcess<LoadResult>(
            options.pinning,
            LOAD_CLIENT,
            settingsFor(target, options.workAloneAt, options.seconds),
          ),
        ),
      );
      pairedRatios.push(full!.requestsPerSecond / naive!.requestsPerSecond);
      process.stderr.write(
        `receiver  c=${options.workAloneAt}  paired round ${round + 1}: naive ${Math.round(naive!.requestsPerSecond)} req/s, full path ${Math.round(full!.requestsPerSecond)} req/s\n`,
      );
    }
    const rssAfterMiB = rssMiB(fullPath.child.pid);

    // Redis memory for sizing: what one more queued delivery costs, measured over a full round.
    await redis.flushall();
    const emptyBytes = await usedMemory(redis);
    // Every request carried a new delivery, so each 2xx is one queued job.
    const deliveriesMeasured = (await load('full path', 50, options.seconds)).ok;
    const redisBytesPerDelivery = ((await usedMemory(redis)) - emptyBytes) / deliveriesMeasured;
    await redis.flushall();

    return {
      rounds,
      pairedRatios,
      memory: {
        rssBeforeMiB,
        rssAfterMiB,
        sustainedSeconds,
        redisBytesPerDelivery,
        deliveriesMeasured,
      },
    };
  } finally {
    for (const server of servers.values()) await server.stop();
  }
}

async function startTarget(
  target: Target,
  { redisUrl, pinning }: ReceiverBenchOptions,
): Promise<Server> {
  const port = await freePort();
  const baseline = (...args: string[]) => startServer(pinning, [BASELINE, ...args], port);
  if (target === 'node:http') return baseline('http', String(port));
  if (target === 'bare Express') return baseline('express', String(port));
  if (target === 'work alone') return baseline('work', String(port), SECRET);
  if (target === 'naive receiver') return baseline('naive', String(port), SECRET, redisUrl);
  return startReceiverUnderTest(pinning, port, { secret: SECRET, redisUrl, prefix: PREFIX });
}

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

function progress(label: string, result: RoundResult): void {
  process.stderr.write(
    `${label}: ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, server ${Math.round(result.serverCpuMicrosPerRequest)} µs CPU/req, Redis ${Math.round(result.redisCpuMicrosPerRequest)}\n`,
  );
}

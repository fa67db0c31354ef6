/**
 * The console beside intake: `feedback-receiver serve` (with ADMIN_TOKEN) on the server core,
 * holding `history` deliveries a worker handled, answers a steady open-loop stream of deliveries,
 * first alone and then while `operators` loops search the console's API without pause (each asks
 * again as soon as it has its answer). Reported: intake's answer p99 both ways, the searches'
 * own times, the same searches once the history holds `larger` deliveries (the rest written as a
 * worker writes them, without jobs: what a search reads is the history), and the history's bytes
 * per delivery.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { freePort } from '../src/cli/free-port.js';
import { loadWorkerConfig } from '../src/config.js';
import { historyKeys } from '../src/history/delivery-history.js';
import { createHistoryWriter } from '../src/history/history-writer.js';
import { createLogger } from '../src/logger.js';
import { startWorker } from '../src/worker-process.js';
import { defineHandler } from '../src/worker/handler.js';
import type { Delivery } from '../src/webhooks/delivery.js';
import type { FeedbackRecord } from '../src/webhooks/feedback-record.js';
import type { OpenLoopResult, OpenLoopSettings } from './open-loop-client.js';
import { feedbackRecord } from './payload.js';
import type { Pinning } from './pinning.js';
import { here, runJsonProcess, startReceiverUnderTest } from './processes.js';
import { percentile } from './stats.js';

export interface ConsoleBenchOptions {
  readonly redisUrl: string;
  readonly pinning: Pinning;
  /** Deliveries handled before the measurement: what the console searches. */
  readonly history: number;
  readonly operators: number;
  /** The intake's offered load, deliveries per second. */
  readonly perSecond: number;
  /** How many deliveries the history holds for the second search row. */
  readonly larger: number;
  readonly seconds: number;
}

/** Searches over the console's API by `operators` loops for a while, intake or not. */
export interface SearchRow {
  readonly history: number;
  readonly searches: number;
  readonly searchP50Ms: number;
  readonly searchP99Ms: number;
  /** Searches answered 503 CONSOLE_BUSY: the console's budget was spent. */
  readonly busy: number;
}

export interface ConsoleBenchResult {
  readonly history: number;
  readonly operators: number;
  readonly perSecond: number;
  readonly alone: OpenLoopResult;
  readonly withConsole: OpenLoopResult;
  /** The searches made while intake was measured. */
  readonly atHistory: SearchRow;
  /** The same searches once the history holds `larger` deliveries (the rest written directly). */
  readonly atLarger: SearchRow;
  /** Redis memory of the history (MEMORY USAGE of its keys) per delivery it holds. */
  readonly historyBytesPerEntry: number;
}

const SECRET = 'bench-console-secret-0123456789';
const TOKEN = 'bench-console-token';
const PREFIX = 'bench-console';
const OPEN_LOOP = here('./open-loop-client.js');
const FILL_PER_SECOND = 1_000;
const DEADLINE_MS = 120_000;

export async function benchConsole(options: ConsoleBenchOptions): Promise<ConsoleBenchResult> {
  const port = await freePort();
  const receiver = await startReceiverUnderTest(options.pinning, port, {
    secret: SECRET,
    redisUrl: options.redisUrl,
    prefix: PREFIX,
    env: { ADMIN_TOKEN: TOKEN },
  });
  let handled = 0;
  const logger = createLogger({ level: 'info', destination: pino.destination('/dev/null') });
  const workerConfig = loadWorkerConfig({
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: PREFIX,
    WORKER_CONCURRENCY: '50',
    METRICS_PORT: '0',
  });
  const worker = await startWorker(workerConfig, logger, {
    handlers: [defineHandler({ name: 'console-bench', handle: () => void (handled += 1) })],
  });
  const redis = new Redis(options.redisUrl);
  const send = (perSecond: number, seconds: number, runId: string) =>
    runJsonProcess<OpenLoopResult>(options.pinning, OPEN_LOOP, {
      url: `${receiver.url}/webhooks/feedback`,
      perSecond,
      seconds,
      secret: SECRET,
      runId,
    } satisfies OpenLoopSettings);
  try {
    const fillRun = randomUUID().slice(0, 8);
    const filled = await send(FILL_PER_SECOND, options.history / FILL_PER_SECOND, fillRun);
    const deadline = Date.now() + DEADLINE_MS;
    while (handled < filled.ok && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const historyBytesPerEntry = await bytesPerEntry(redis, workerConfig.queuePrefix);

    const alone = await send(options.perSecond, options.seconds, randomUUID().slice(0, 8));
    // What operators look for: a word every record has, one record by its id, and an email.
    const queries = ['checkout', `fb_${fillRun}_${Math.floor(options.history / 2)}`, 'ana@'];
    const searching = operators(receiver.url, options.operators, queries);
    const withConsole = await send(options.perSecond, options.seconds, randomUUID().slice(0, 8));
    const atHistory = { history: filled.ok, ...(await searching.stop()) };

    // A larger history, its entries written as a worker writes them, without their jobs.
    const writer = createHistoryWriter({
      connection: redis,
      prefix: workerConfig.queuePrefix,
      ttlSeconds: workerConfig.dedupeTtlSeconds,
      logger,
    });
    const largerRun = randomUUID().slice(0, 8);
    for (let index = filled.ok; index < options.larger; index += 1) {
      const record = feedbackRecord(`fb_${largerRun}_${index}`) as FeedbackRecord;
      const delivery: Delivery = {
        key: `feedback.created:${record.id}`,
        event: 'feedback.created',
        receivedAt: new Date().toISOString(),
        record,
      };
      writer.routed(delivery, `bench-${index}`, ['console-bench']);
      writer.finished(delivery, 'console-bench', { state: 'completed', at: delivery.receivedAt });
      // Let the writer's batches go out as they fill, instead of all at the end.
      if (index % 1_000 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await writer.close();
    const larger = operators(receiver.url, options.operators, queries);
    await new Promise((resolve) => setTimeout(resolve, options.seconds * 1000));
    const atLarger = { history: options.larger, ...(await larger.stop()) };

    const result: ConsoleBenchResult = {
      history: filled.ok,
      operators: options.operators,
      perSecond: options.perSecond,
      alone,
      withConsole,
      atHistory,
      atLarger,
      historyBytesPerEntry,
    };
    process.stderr.write(
      `console   ${result.history} kept, ${result.operators} operators: intake p99 ${alone.answerP99Ms} ms alone, ${withConsole.answerP99Ms} ms with them; ` +
        `search p99 ${atHistory.searchP99Ms} ms, at ${options.larger} ${atLarger.searchP99Ms} ms; ` +
        `history ${historyBytesPerEntry} B per delivery\n`,
    );
    return result;
  } finally {
    redis.disconnect();
    await worker.close();
    await receiver.stop();
  }
}

/** `count` operators searching the console's API without pause, until stopped. */
function operators(url: string, count: number, queries: readonly string[]) {
  const searchMs: number[] = [];
  let busy = 0;
  let searching = true;
  const operator = async (first: number) => {
    for (let index = first; searching; index += 1) {
      const q = queries[index % queries.length]!;
      const started = performance.now();
      const response = await fetch(`${url}/admin/api/deliveries?q=${encodeURIComponent(q)}`, {
        headers: { Authorization: `Bearer ${TOKEN}` },
      });
      await response.arrayBuffer();
      if (response.status === 503) busy += 1;
      else searchMs.push(performance.now() - started);
    }
  };
  const loops = Array.from({ length: count }, (_, index) => operator(index));
  return {
    async stop(): Promise<Omit<SearchRow, 'history'>> {
      searching = false;
      await Promise.all(loops);
      return {
        searches: searchMs.length,
        searchP50Ms: Math.round(percentile(searchMs, 50) * 10) / 10,
        searchP99Ms: Math.round(percentile(searchMs, 99) * 10) / 10,
        busy,
      };
    },
  };
}

/** Redis's own count of the history's bytes (MEMORY USAGE of each key), per delivery it holds. */
async function bytesPerEntry(redis: Redis, prefix: string): Promise<number> {
  const { base } = historyKeys(prefix);
  let bytes = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${base}*`, 'COUNT', 1_000);
    cursor = next;
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.memory('USAGE', key, 'SAMPLES', '0');
    for (const [, used] of (await pipeline.exec()) ?? []) bytes += Number(used ?? 0);
  } while (cursor !== '0');
  const entries = Number(await redis.get(`${base}seq`));
  return entries > 0 ? Math.round(bytes / entries) : Number.NaN;
}

/**
 * The console beside intake: `feedback-receiver serve` (with ADMIN_TOKEN) on the server core,
 * holding `history` deliveries a worker handled, answers a steady open-loop stream of deliveries,
 * first alone and then while `operators` loops search the console's API without pause (each asks
 * again as soon as it has its answer). Reported: intake's answer p99 both ways, and the searches'
 * own times.
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { freePort } from '../src/cli/free-port.js';
import { loadWorkerConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startWorker } from '../src/worker-process.js';
import { defineHandler } from '../src/worker/handler.js';
import type { OpenLoopResult, OpenLoopSettings } from './open-loop-client.js';
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
  readonly seconds: number;
}

export interface ConsoleBenchResult {
  readonly history: number;
  readonly operators: number;
  readonly perSecond: number;
  readonly alone: OpenLoopResult;
  readonly withConsole: OpenLoopResult;
  readonly searches: number;
  readonly searchP50Ms: number;
  readonly searchP99Ms: number;
  /** Searches answered 503 CONSOLE_BUSY: the console's budget was spent. */
  readonly busy: number;
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
  const worker = await startWorker(
    loadWorkerConfig({
      REDIS_URL: options.redisUrl,
      QUEUE_PREFIX: PREFIX,
      WORKER_CONCURRENCY: '50',
      METRICS_PORT: '0',
    }),
    createLogger({ level: 'info', destination: pino.destination('/dev/null') }),
    { handlers: [defineHandler({ name: 'console-bench', handle: () => void (handled += 1) })] },
  );
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

    const alone = await send(options.perSecond, options.seconds, randomUUID().slice(0, 8));

    // What operators look for: a word every record has, one record by its id, and an email.
    const queries = ['checkout', `fb_${fillRun}_${Math.floor(options.history / 2)}`, 'ana@'];
    const searchMs: number[] = [];
    let busy = 0;
    let searching = true;
    const operator = async (first: number) => {
      for (let index = first; searching; index += 1) {
        const q = queries[index % queries.length]!;
        const started = performance.now();
        const response = await fetch(
          `${receiver.url}/admin/api/deliveries?q=${encodeURIComponent(q)}`,
          { headers: { Authorization: `Bearer ${TOKEN}` } },
        );
        await response.arrayBuffer();
        if (response.status === 503) busy += 1;
        else searchMs.push(performance.now() - started);
      }
    };
    const operators = Array.from({ length: options.operators }, (_, index) => operator(index));
    const withConsole = await send(options.perSecond, options.seconds, randomUUID().slice(0, 8));
    searching = false;
    await Promise.all(operators);

    const result: ConsoleBenchResult = {
      history: filled.ok,
      operators: options.operators,
      perSecond: options.perSecond,
      alone,
      withConsole,
      searches: searchMs.length,
      searchP50Ms: Math.round(percentile(searchMs, 50)),
      searchP99Ms: Math.round(percentile(searchMs, 99)),
      busy,
    };
    process.stderr.write(
      `console   ${result.history} kept, ${result.operators} operators: intake p99 ${alone.answerP99Ms} ms alone, ${withConsole.answerP99Ms} ms with them; ` +
        `${result.searches} searches p50 ${result.searchP50Ms} ms p99 ${result.searchP99Ms} ms, ${busy} busy\n`,
    );
    return result;
  } finally {
    await worker.close();
    await receiver.stop();
  }
}

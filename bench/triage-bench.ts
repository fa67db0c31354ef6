/**
 * Auto-triage under the API's rate limit: a backlog of deliveries, each needing one PATCH, through
 * the sandbox, the receiver and workers. Reports how close the PATCHes came to the limit's own
 * pace, the busiest window by the records' update times, the PATCHes the sandbox refused with 429
 * (the limit counted where the API counts it), and failed runs (there must be none).
 *
 * At the real minute (`windowMs` 60 000) the workers are `feedback-receiver work` processes with
 * nothing scaled: what a user deploys. Scaled (a shorter window, for a quick run) one worker runs
 * in this process with the window and the limiter's margin scaled to match.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { createApiClient } from '../src/api/client.js';
import { freePort } from '../src/cli/free-port.js';
import { registerHook } from '../src/cli/register-hook.js';
import { loadReceiverConfig, loadWorkerConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { runQueueName, TRIAGE_HANDLER_NAME } from '../src/index.js';
import { startReceiver } from '../src/receiver.js';
import { DEFAULT_SEED, SANDBOX_TOKEN, type Seed } from '../src/sandbox/seed.js';
import { startSandbox } from '../src/sandbox/server.js';
import { startWorker } from '../src/worker-process.js';
import type { Pinning } from './pinning.js';
import { CLI, startServer } from './processes.js';

export const REAL_MINUTE_MS = 60_000;

export interface TriageBenchOptions {
  readonly redisUrl: string;
  readonly pinning: Pinning;
  readonly deliveries: number;
  /** The API's limit: requests per window. */
  readonly limit: number;
  /** The API's window: 60 000, the real minute; shorter scales the run down. */
  readonly windowMs: number;
  /** Worker processes, at the real minute. */
  readonly workerProcesses: number;
  /** Scaled only: how long past the window the limiter holds a slot. */
  readonly scaledMarginMs: number;
}

export interface TriageBenchResult {
  /** False at the real minute. */
  readonly scaled: boolean;
  readonly windowMs: number;
  /** The limiter's hold past the window: 1 s at the real minute. */
  readonly marginMs: number;
  /** Worker processes; 0 when the worker ran in the bench's own process. */
  readonly workerProcesses: number;
  readonly deliveries: number;
  readonly patched: number;
  readonly failedRuns: number;
  readonly limit: number;
  /**
   * The limit's own pace against ours: a burst of n PATCHes can end no sooner than
   * floor((n - 1) / limit) windows after the first one; that time over the time it took.
   */
  readonly ofLimit: number;
  /** PATCHes a window at that pace: `limit * ofLimit`. */
  readonly achievedPerWindow: number;
  /**
   * The most records updated within any one window. Stamped as each PATCH is applied, a little
   * after the sandbox counted it against its limit, so this can exceed the limit by the odd one.
   */
  readonly busiestWindow: number;
  /** PATCHes the sandbox answered 429, from the workers' own /metrics: 0 if the limit held. */
  readonly refused: number;
  /** From the first PATCH to the last. */
  readonly firstToLastSeconds: number;
  /** The ideal for that: floor((n - 1) / limit) windows. */
  readonly idealSeconds: number;
  /** From the first record created to the last PATCH, the workers' start included. */
  readonly seconds: number;
}

const PROJECT = 'prj_shop';
const RULES = {
  rules: [{ name: 'all-urgent', when: { field: 'id', exists: true }, set: { priority_id: 4 } }],
};
/**
 * The hook is registered with another member's token: the worker's token then starts with the
 * whole of its first window, as in production, where the hook was registered long before.
 */
const REGISTRAR_TOKEN = 'bench-registrar-token';
const SEED: Seed = {
  ...DEFAULT_SEED,
  users: [
    ...DEFAULT_SEED.users,
    {
      id: 'usr_bench_registrar',
      name: 'Bench registrar',
      email: 'registrar@example.com',
      plan: 'company',
      token: REGISTRAR_TOKEN,
      projects: [PROJECT],
    },
  ],
};

/** A running set of workers, whichever way they run. */
interface Workers {
  failedRuns(): Promise<number>;
  refused(): Promise<number>;
}

export async function benchTriage(options: TriageBenchOptions): Promise<TriageBenchResult> {
  const logger = createLogger({ level: 'silent' });
  const dir = await mkdtemp(join(tmpdir(), 'bench-triage-'));
  const cleanup: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true })];
  const scaled = options.windowMs !== REAL_MINUTE_MS;
  const marginMs = scaled ? options.scaledMarginMs : REAL_MINUTE_MS / 60;
  try {
    const rulesPath = join(dir, 'rules.json');
    await writeFile(rulesPath, JSON.stringify(RULES));
    // The sandbox counts each token's last window of requests (a sliding window): stricter than
    // the fixed window, opened by the first request, that many APIs count. Any burst it lets
    // through, a fixed window lets through too.
    const sandbox = await startSandbox({
      logger,
      seed: SEED,
      rateLimit: { limit: options.limit, windowMs: options.windowMs },
      deliveryBackoffMs: 200,
    });
    cleanup.unshift(sandbox.close);

    const port = await freePort();
    const url = `http://127.0.0.1:${port}/webhooks/feedback`;
    const registrar = createApiClient({ baseUrl: sandbox.url, token: REGISTRAR_TOKEN });
    const { secret } = await registerHook(registrar, { projectId: PROJECT, url });
    const prefix = 'bench-triage';
    const receiver = await startReceiver(
      loadReceiverConfig({
        WEBHOOK_SECRET: secret,
        PORT: String(port),
        HOST: '127.0.0.1',
        REDIS_URL: options.redisUrl,
        QUEUE_PREFIX: prefix,
      }),
      logger,
    );
    cleanup.unshift(receiver.close);
    const env = {
      TRIAGE_RULES: rulesPath,
      FEEDBACK_API_URL: sandbox.url,
      FEEDBACK_API_TOKEN: SANDBOX_TOKEN,
      FEEDBACK_API_RATE_LIMIT: String(options.limit),
      REDIS_URL: options.redisUrl,
      QUEUE_PREFIX: prefix,
      WORKER_CONCURRENCY: '50',
    };
    // The burst is received and queued before the workers start: a backlog, drained at the
    // limit. Received while the PATCHes went out, it kept this process (where the sandbox counts
    // them) busy enough that a PATCH could take more than the limiter's margin to be counted.
    const started = Date.now();
    const ids = await createRecords(sandbox.url, options.deliveries);
    await sandbox.deliverer.idle();
    const workers = scaled
      ? await startWorkerHere(env, options.windowMs, marginMs, cleanup)
      : await startWorkerProcesses(env, options, cleanup);
    const patchedAt = () =>
      ids
        .map((id) => sandbox.state.records.get(id))
        .filter((record) => record?.priority_id === 4)
        .map((record) => Date.parse(record!.updated_at!));
    // Twice the ideal, and time to start.
    const deadline =
      started + 30_000 + 2 * Math.ceil(ids.length / options.limit) * options.windowMs;
    for (;;) {
      const failedRuns = await workers.failedRuns();
      const times = patchedAt();
      if (times.length + failedRuns >= ids.length) {
        times.sort((a, b) => a - b);
        const span = times.at(-1)! - times[0]!;
        const ideal = Math.floor((times.length - 1) / options.limit) * options.windowMs;
        const ofLimit = span > 0 && ideal > 0 ? ideal / span : Number.NaN;
        return {
          scaled,
          windowMs: options.windowMs,
          marginMs,
          workerProcesses: scaled ? 0 : options.workerProcesses,
          deliveries: ids.length,
          patched: times.length,
          failedRuns,
          limit: options.limit,
          ofLimit,
          achievedPerWindow: options.limit * ofLimit,
          busiestWindow: busiestWindow(times, options.windowMs),
          refused: await workers.refused(),
          firstToLastSeconds: span / 1000,
          idealSeconds: ideal / 1000,
          seconds: (Date.now() - started) / 1000,
        };
      }
      if (Date.now() > deadline) {
        throw new Error(`triage bench: ${times.length} of ${ids.length} patched in time`);
      }
      await sleep(100);
    }
  } finally {
    for (const step of cleanup) await step();
  }
}

/** One worker in this process, its window and its limiter's margin scaled down. */
async function startWorkerHere(
  env: Record<string, string>,
  windowMs: number,
  marginMs: number,
  cleanup: (() => Promise<unknown>)[],
): Promise<Workers> {
  const metricsPort = await freePort();
  const worker = await startWorker(
    loadWorkerConfig({ ...env, METRICS_PORT: String(metricsPort) }),
    createLogger({ level: 'silent' }),
    { rateLimitWindowMs: windowMs, rateLimitMarginMs: marginMs },
  );
  cleanup.unshift(worker.close);
  return {
    failedRuns: () => worker.runQueues.of(TRIAGE_HANDLER_NAME).getFailedCount(),
    refused: () => refusedPatches([`http://127.0.0.1:${metricsPort}/metrics`]),
  };
}

/** `feedback-receiver work` processes, as production runs them: nothing scaled. */
async function startWorkerProcesses(
  env: Record<string, string>,
  { pinning, redisUrl, workerProcesses }: TriageBenchOptions,
  cleanup: (() => Promise<unknown>)[],
): Promise<Workers> {
  const metricsUrls: string[] = [];
  for (let i = 0; i < workerProcesses; i += 1) {
    const metricsPort = await freePort();
    const worker = await startServer(pinning, [CLI, 'work'], metricsPort, {
      ...env,
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
    });
    cleanup.unshift(worker.stop);
    metricsUrls.push(`http://127.0.0.1:${metricsPort}/metrics`);
    await untilReady(`http://127.0.0.1:${metricsPort}/readyz`);
  }
  const handlerRuns = new Queue(runQueueName(TRIAGE_HANDLER_NAME), {
    connection: { url: redisUrl },
    prefix: env.QUEUE_PREFIX!,
  });
  cleanup.unshift(() => handlerRuns.close());
  return {
    failedRuns: () => handlerRuns.getFailedCount(),
    refused: () => refusedPatches(metricsUrls),
  };
}

async function untilReady(url: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while ((await fetch(url).catch(() => undefined))?.status !== 200) {
    if (Date.now() > deadline) throw new Error(`triage bench: no worker ready at ${url}`);
    await sleep(50);
  }
}

/** Creates records in the sandbox, a few at a time; it delivers each to the receiver. */
async function createRecords(sandboxUrl: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const create = async () => {
    while (next < count) {
      next += 1;
      const response = await fetch(`${sandboxUrl}/sandbox/projects/${PROJECT}/feedback`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ title: `Bench record ${next}`, priority_id: 2 }),
      });
      if (response.status !== 201) throw new Error(`the sandbox answered ${response.status}`);
      ids.push(((await response.json()) as { id: string }).id);
    }
  };
  await Promise.all(Array.from({ length: 20 }, create));
  return ids;
}

/** PATCHes answered 429, as the workers count them in feedback_receiver_api_requests_total. */
async function refusedPatches(metricsUrls: readonly string[]): Promise<number> {
  let refused = 0;
  for (const url of metricsUrls) {
    const text = await (await fetch(url)).text();
    const line = /^feedback_receiver_api_requests_total\{[^}]*\} \d+$/gm;
    for (const sample of text.match(line) ?? []) {
      if (sample.includes('method="PATCH"') && sample.includes('status="429"')) {
        refused += Number(sample.split(' ').at(-1));
      }
    }
  }
  return refused;
}

function busiestWindow(sortedTimes: readonly number[], windowMs: number): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < sortedTimes.length; end += 1) {
    while (sortedTimes[end]! - sortedTimes[start]! >= windowMs) start += 1;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

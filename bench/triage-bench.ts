/**
 * Auto-triage under the API's rate limit: a burst of deliveries, each needing one PATCH, through
 * the sandbox, the receiver and a worker, with the API's minute scaled down to a second so the
 * run is short. Reports the rate achieved against the limit, the busiest second by the records'
 * update times, the PATCHes the sandbox refused with 429 (the limit counted where the API counts
 * it), and failed runs (there must be none).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiClient } from '../src/api/client.js';
import { freePort } from '../src/cli/free-port.js';
import { registerHook } from '../src/cli/register-hook.js';
import { loadReceiverConfig, loadWorkerConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startReceiver } from '../src/receiver.js';
import { SANDBOX_TOKEN } from '../src/sandbox/seed.js';
import { startSandbox } from '../src/sandbox/server.js';
import { startWorker } from '../src/worker-process.js';

export interface TriageBenchOptions {
  readonly redisUrl: string;
  readonly deliveries: number;
  /** The API's limit, per second instead of per minute. */
  readonly limitPerSecond: number;
}

export interface TriageBenchResult {
  readonly deliveries: number;
  readonly patched: number;
  readonly failedRuns: number;
  readonly limitPerSecond: number;
  /** PATCHes per second from the first to the last. */
  readonly achievedPerSecond: number;
  /**
   * The most records updated within any one second. Stamped as each PATCH is applied, a little
   * after the sandbox counted it against its limit, so this can exceed the limit by the odd one.
   */
  readonly busiestSecond: number;
  /** PATCHes the sandbox answered 429, from the worker's own /metrics: 0 if the limit held. */
  readonly refused: number;
  readonly seconds: number;
}

const PROJECT = 'prj_shop';
const DEADLINE_MS = 120_000;
const RULES = {
  rules: [{ name: 'all-urgent', when: { field: 'id', exists: true }, set: { priority_id: 4 } }],
};

export async function benchTriage(options: TriageBenchOptions): Promise<TriageBenchResult> {
  const logger = createLogger({ level: 'silent' });
  const dir = await mkdtemp(join(tmpdir(), 'bench-triage-'));
  const cleanup: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true })];
  try {
    const rulesPath = join(dir, 'rules.json');
    await writeFile(rulesPath, JSON.stringify(RULES));
    const windowMs = 1_000;
    const sandbox = await startSandbox({
      logger,
      rateLimit: { limit: options.limitPerSecond, windowMs },
      deliveryBackoffMs: 200,
    });
    cleanup.unshift(sandbox.close);

    const port = await freePort();
    const metricsPort = await freePort();
    const url = `http://127.0.0.1:${port}/webhooks/feedback`;
    const api = createApiClient({ baseUrl: sandbox.url, token: SANDBOX_TOKEN });
    const { secret } = await registerHook(api, { projectId: PROJECT, url });
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
    const worker = await startWorker(
      loadWorkerConfig({
        TRIAGE_RULES: rulesPath,
        FEEDBACK_API_URL: sandbox.url,
        FEEDBACK_API_TOKEN: SANDBOX_TOKEN,
        FEEDBACK_API_RATE_LIMIT: String(options.limitPerSecond),
        REDIS_URL: options.redisUrl,
        QUEUE_PREFIX: prefix,
        WORKER_CONCURRENCY: '50',
        METRICS_PORT: String(metricsPort),
      }),
      logger,
      { rateLimitWindowMs: windowMs },
    );
    cleanup.unshift(worker.close);
    // The hook's registration took a slot of the window; let it pass.
    await sleep(windowMs);

    const started = Date.now();
    const ids = await createRecords(sandbox.url, options.deliveries);
    const patchedAt = () =>
      ids
        .map((id) => sandbox.state.records.get(id))
        .filter((record) => record?.priority_id === 4)
        .map((record) => Date.parse(record!.updated_at!));
    for (;;) {
      const failedRuns = await worker.handlerRuns.getFailedCount();
      const times = patchedAt();
      if (times.length + failedRuns >= ids.length) {
        times.sort((a, b) => a - b);
        const span = (times.at(-1)! - times[0]!) / 1000;
        return {
          deliveries: ids.length,
          patched: times.length,
          failedRuns,
          limitPerSecond: options.limitPerSecond,
          achievedPerSecond: span > 0 ? (times.length - 1) / span : Number.NaN,
          busiestSecond: busiestWindow(times, windowMs),
          refused: await refusedPatches(`http://127.0.0.1:${metricsPort}/metrics`),
          seconds: (Date.now() - started) / 1000,
        };
      }
      if (Date.now() - started > DEADLINE_MS) {
        throw new Error(`triage bench: ${times.length} of ${ids.length} patched in time`);
      }
      await sleep(100);
    }
  } finally {
    for (const step of cleanup) await step();
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

/** PATCHes answered 429, as the worker counts them in feedback_receiver_api_requests_total. */
async function refusedPatches(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const line = /^feedback_receiver_api_requests_total\{[^}]*\} \d+$/gm;
  const refused = (text.match(line) ?? []).filter(
    (sample) => sample.includes('method="PATCH"') && sample.includes('status="429"'),
  );
  return refused.reduce((sum, sample) => sum + Number(sample.split(' ').at(-1)), 0);
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

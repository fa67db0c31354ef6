import { mkdtemp, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { DELIVERIES_QUEUE } from '../../src/queue/deliveries-queue.js';
import { createRunQueues, type RunQueues } from '../../src/runs/run-queues.js';
import {
  reportedUrl,
  runCli,
  startServe,
  workerStarted,
  type CliProcess,
} from '../helpers/cli-process.js';
import { countCompletedRuns } from '../helpers/completed-runs.js';
import { postDelivery } from '../helpers/signed-request.js';
import {
  API_TOKEN,
  startFakeFeedbackApi,
  type FakeFeedbackApi,
} from '../helpers/fake-feedback-api.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SECRET = 'e2e-work-secret';

let processes: CliProcess[] = [];
let api: FakeFeedbackApi;
let prefix: string;
let runQueues: RunQueues;
let rosterReads: Redis;
let deliveries: Queue;

beforeEach(async () => {
  api = await startFakeFeedbackApi();
  prefix = `e2e-${randomUUID().slice(0, 8)}`;
  const connection = { url: inject('redisUrl') };
  rosterReads = new Redis(inject('redisUrl'));
  runQueues = createRunQueues(rosterReads, prefix);
  deliveries = new Queue(DELIVERIES_QUEUE, { connection, prefix });
});
afterEach(async () => {
  for (const cli of processes) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
  await Promise.all(processes.map((cli) => cli.exited()));
  processes = [];
  await Promise.all([runQueues.close(), deliveries.close()]);
  rosterReads.disconnect();
  await api.close();
});

function start(command: 'serve' | 'work', env: Record<string, string>): CliProcess {
  const cli = runCli([command], {
    REDIS_URL: inject('redisUrl'),
    QUEUE_PREFIX: prefix,
    ...env,
  });
  processes.push(cli);
  return cli;
}

async function startReceiver(): Promise<string> {
  const { cli, url } = await startServe({
    WEBHOOK_SECRET: SECRET,
    REDIS_URL: inject('redisUrl'),
    QUEUE_PREFIX: prefix,
  });
  processes.push(cli);
  return url;
}

async function startWork(env: Record<string, string>): Promise<CliProcess> {
  const cli = start('work', {
    FEEDBACK_API_URL: api.url,
    FEEDBACK_API_TOKEN: API_TOKEN,
    ...env,
  });
  return workerStarted(cli);
}

function postSigned(url: string, record: object) {
  return postDelivery(url, record, SECRET);
}

describe('feedback-receiver work', () => {
  it('turns a signed delivery into exactly one PATCH with the fields the rules chose', async () => {
    const digest = join(await mkdtemp(join(tmpdir(), 'digest-')), 'low-ratings.jsonl');
    const url = await startReceiver();
    const worker = await startWork({
      TRIAGE_RULES: join(ROOT, 'examples/triage-rules.jsonc'),
      HANDLERS: 'examples/handlers/low-rating-digest.mjs',
      LOW_RATING_DIGEST: digest,
    });
    const record = {
      id: 'fb_e2e',
      title: 'App crashes when I upload a photo',
      rating: 1,
      priority_id: 2,
    };

    expect((await postSigned(url, record)).status).toBe(202);
    expect((await postSigned(url, record)).status).toBe(200); // a duplicate changes nothing
    await vi.waitFor(
      async () =>
        expect(await countCompletedRuns(runQueues), `both handler runs\n${worker.output()}`).toBe(
          2,
        ),
      { timeout: 5_000 },
    );

    const patches = api.requests.filter((request) => request.method === 'PATCH');
    expect(patches).toHaveLength(1);
    expect(patches[0]).toMatchObject({
      path: '/v1/feedback/fb_e2e',
      body: { priority_id: 4, type_id: 1 },
    });
    // The example custom handler ran too, from its own module.
    expect(JSON.parse(await readFile(digest, 'utf8'))).toMatchObject({ id: 'fb_e2e', rating: 1 });
    expect(worker.output()).not.toContain(API_TOKEN);
  });

  it('serves /healthz, /readyz and /metrics on METRICS_PORT, counting runs and API calls', async () => {
    const url = await startReceiver();
    const worker = await startWork({
      TRIAGE_RULES: join(ROOT, 'examples/triage-rules.jsonc'),
      METRICS_PORT: '0',
    });
    const probes = await reportedUrl(
      worker,
      'worker probes listening (/healthz, /readyz, /metrics)',
    );
    expect((await fetch(`${probes}/healthz`)).status).toBe(200);
    expect((await fetch(`${probes}/readyz`)).status).toBe(200);
    await postSigned(url, { id: 'fb_metrics', title: 'It crashed', priority_id: 1 });
    await vi.waitFor(async () => expect(await countCompletedRuns(runQueues), 'the run').toBe(1), {
      timeout: 5_000,
    });
    const metrics = await (await fetch(`${probes}/metrics`)).text();
    expect(metrics).toContain(
      'feedback_receiver_handler_runs_total{handler="auto-triage",outcome="completed"} 1',
    );
    expect(metrics).toContain(
      'feedback_receiver_api_requests_total{method="PATCH",status="200"} 1',
    );
    expect(metrics).toMatch(
      /feedback_receiver_queue_jobs\{queue="runs-auto-triage",state="failed"\} 0/,
    );
  });

  it('finishes on another worker the job of a worker killed mid-job', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stall-'));
    const env = {
      HANDLERS: 'test/fixtures/handlers/blocks-first-run.mjs',
      BLOCKS_FIRST_RUN_STARTED: join(dir, 'started'),
      BLOCKS_FIRST_RUN_FINISHED: join(dir, 'finished'),
      WORKER_LOCK_SECONDS: '1',
    };
    const url = await startReceiver();
    const doomed = await startWork(env);
    expect((await postSigned(url, { id: 'fb_stall' })).status).toBe(202);
    await vi.waitFor(
      () => expect(existsSync(env.BLOCKS_FIRST_RUN_STARTED), 'the first run to start').toBeTruthy(),
      { timeout: 5_000 },
    );
    doomed.child.kill('SIGKILL');
    await doomed.exited();

    const survivor = await startWork(env);
    await vi.waitFor(
      () =>
        expect(
          existsSync(env.BLOCKS_FIRST_RUN_FINISHED),
          `the run to finish on the survivor\n${survivor.output()}`,
        ).toBeTruthy(),
      { timeout: 15_000 },
    );
    expect(await readFile(env.BLOCKS_FIRST_RUN_FINISHED, 'utf8')).toBe(
      `fb_stall pid ${survivor.child.pid}`,
    );
  });

  it('waits for a running handler on SIGTERM, and exits at once on a second signal', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'second-signal-'));
    const env = {
      HANDLERS: 'test/fixtures/handlers/blocks-first-run.mjs',
      BLOCKS_FIRST_RUN_STARTED: join(dir, 'started'),
      BLOCKS_FIRST_RUN_FINISHED: join(dir, 'finished'),
      SHUTDOWN_TIMEOUT_SECONDS: '600',
    };
    const url = await startReceiver();
    const worker = await startWork(env);
    await postSigned(url, { id: 'fb_second_signal' });
    await vi.waitFor(
      () => expect(existsSync(env.BLOCKS_FIRST_RUN_STARTED), 'the run to start').toBeTruthy(),
      { timeout: 5_000 },
    );
    worker.child.kill('SIGTERM');
    await vi.waitFor(
      () =>
        expect(
          worker.output().includes('shutting down the worker'),
          'the first signal',
        ).toBeTruthy(),
      { timeout: 5_000 },
    );
    expect(worker.child.exitCode).toBeNull(); // still waiting for the handler
    worker.child.kill('SIGINT');
    expect(await worker.exited()).toBe(1);
    expect(worker.output()).toContain('second signal: exiting now');
  });

  it('stops at start, naming the module, when a handler module fails to load', async () => {
    const cli = start('work', { HANDLERS: 'test/fixtures/handlers/throws-on-load.mjs' });
    expect(await cli.exited()).toBe(1);
    expect(cli.output()).toMatch(
      /HANDLERS: cannot load test\/fixtures\/handlers\/throws-on-load\.mjs: this module is broken/,
    );
  });

  it('stops at start with the JSON path of a problem in the rules file', async () => {
    const cli = start('work', {
      TRIAGE_RULES: join(ROOT, 'test/fixtures/bad-triage-rules.json'),
      TRIAGE_DRY_RUN: 'true',
    });
    expect(await cli.exited()).toBe(1);
    expect(cli.output()).toMatch(/rules\[1\]\.when\.gte: .*number/);
  });

  it('logs the PATCH it would send, and sends none, in a dry run', async () => {
    const url = await startReceiver();
    const worker = await startWork({
      TRIAGE_RULES: join(ROOT, 'examples/triage-rules.jsonc'),
      TRIAGE_DRY_RUN: 'true',
    });
    expect(worker.output()).toMatch(/"dryRun":true,"msg":"worker started"/);
    await postSigned(url, { id: 'fb_dry', title: 'It crashed twice', priority_id: 1 });
    await vi.waitFor(async () => expect(await countCompletedRuns(runQueues), 'the run').toBe(1), {
      timeout: 5_000,
    });
    // The log line crosses a pipe; it may arrive a moment after Redis says the run completed.
    await vi.waitFor(
      () => expect(worker.output().includes('triage dry run: would PATCH'), 'the log').toBeTruthy(),
      { timeout: 5_000 },
    );
    expect(worker.output()).toContain('"patch":{"priority_id":4,"type_id":1}');
    expect(api.requests).toHaveLength(0);
  });
});

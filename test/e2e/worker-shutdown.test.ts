/**
 * A worker process stops on SIGTERM within a bounded time whatever its handlers do (issue 21,
 * defect 3): after SHUTDOWN_TIMEOUT_SECONDS it aborts them, abandons one that ignores its signal,
 * and exits; the abandoned run completes on another worker once its lock expires.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, inject, it, vi } from 'vitest';
import { postDelivery } from '../helpers/signed-request.js';
import { runCli, startServe, workerStarted, type CliProcess } from '../helpers/cli-process.js';
import { settlesBefore } from '../helpers/hang-guard.js';

const SECRET = 'e2e-shutdown-secret';
let processes: CliProcess[] = [];

afterEach(async () => {
  for (const cli of processes) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
  await Promise.all(processes.map((cli) => cli.exited()));
  processes = [];
});

async function startWork(env: Record<string, string>): Promise<CliProcess> {
  const cli = runCli(['work'], env);
  processes.push(cli);
  return workerStarted(cli);
}

it('exits on SIGTERM though a handler ignores its signal, and its run completes on another worker', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'shutdown-'));
  const queues = { REDIS_URL: inject('redisUrl'), QUEUE_PREFIX: `e2e-${randomUUID().slice(0, 8)}` };
  const env = {
    ...queues,
    // Its first run anywhere never settles and ignores its AbortSignal; a later one completes.
    HANDLERS: 'test/fixtures/handlers/blocks-first-run.mjs',
    BLOCKS_FIRST_RUN_STARTED: join(dir, 'started'),
    BLOCKS_FIRST_RUN_FINISHED: join(dir, 'finished'),
    SHUTDOWN_TIMEOUT_SECONDS: '2',
    WORKER_LOCK_SECONDS: '1',
  };
  const receiver = await startServe({ WEBHOOK_SECRET: SECRET, ...queues });
  processes.push(receiver.cli);
  const worker = await startWork(env);
  const response = await postDelivery(receiver.url, { id: 'fb_shutdown' }, SECRET);
  expect(response.status).toBe(202);
  await vi.waitFor(
    () => expect(existsSync(env.BLOCKS_FIRST_RUN_STARTED), 'the run to start').toBeTruthy(),
    { timeout: 5_000 },
  );

  worker.child.kill('SIGTERM');
  // A generous bound, far above the shutdown timeout and the wait before abandoning.
  expect(
    await settlesBefore(worker.exited(), 20_000),
    `the worker's exit\n${worker.output()}`,
  ).toBe(true);
  expect(worker.child.exitCode, `the worker's exit code\n${worker.output()}`).toBe(0);
  expect(worker.output()).toContain('worker stopped');

  const survivor = await startWork(env);
  await vi.waitFor(
    () =>
      expect(
        existsSync(env.BLOCKS_FIRST_RUN_FINISHED),
        `the run to finish on another worker\n${survivor.output()}`,
      ).toBeTruthy(),
    { timeout: 10_000 },
  );
  expect(await readFile(env.BLOCKS_FIRST_RUN_FINISHED, 'utf8')).toBe(
    `fb_shutdown pid ${survivor.child.pid}`,
  );
}, 45_000);

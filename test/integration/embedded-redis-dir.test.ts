/**
 * `start`'s private redis-server keeps its data in a directory that one server at a time may
 * write: a second one there would overwrite the append-only files (embedded-redis.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import {
  RedisDirInUseError,
  startEmbeddedRedis,
  type EmbeddedRedis,
} from '../../src/cli/embedded-redis.js';

const cleanup: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'feedback-receiver-dir-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

it('starts one redis-server on a data directory that two starts ask for at once', async () => {
  const dir = await dataDir();
  const outcomes = await Promise.allSettled([
    startEmbeddedRedis({ dir, appendOnly: true }),
    startEmbeddedRedis({ dir, appendOnly: true }),
  ]);
  const servers = outcomes.flatMap((outcome) =>
    outcome.status === 'fulfilled' ? [outcome.value] : [],
  );
  for (const server of servers) cleanup.push(() => server.stop());
  const refusals = outcomes.flatMap((outcome) =>
    outcome.status === 'rejected' ? [outcome.reason as unknown] : [],
  );
  expect(servers, 'redis-servers started on the one directory').toHaveLength(1);
  expect(refusals).toEqual([expect.any(RedisDirInUseError)]);
});

it('starts a redis-server again on a directory whose last one was stopped, or died', async () => {
  const dir = await dataDir();
  const first = await startEmbeddedRedis({ dir, appendOnly: true });
  await first.stop();
  const second: EmbeddedRedis = await startEmbeddedRedis({ dir, appendOnly: true });
  cleanup.push(() => second.stop());
  second.process.kill('SIGKILL');
  await new Promise((resolve) => second.process.once('exit', resolve));
  const third = await startEmbeddedRedis({ dir, appendOnly: true });
  cleanup.push(() => third.stop());
  expect(third.port).toBeGreaterThan(0);
});

it("keeps the record of a directory's redis-server when one that died there before is stopped", async () => {
  const dir = await dataDir();
  const dead = await startEmbeddedRedis({ dir, appendOnly: true });
  dead.process.kill('SIGKILL');
  await new Promise((resolve) => dead.process.once('exit', resolve));
  const running = await startEmbeddedRedis({ dir, appendOnly: true });
  cleanup.push(() => running.stop());
  // The dead one's owner shuts down after the next one started (a supervisor that did not wait).
  await dead.stop();
  const [third] = await Promise.allSettled([startEmbeddedRedis({ dir, appendOnly: true })]);
  if (third.status === 'fulfilled') cleanup.push(() => third.value.stop());
  expect(third).toMatchObject({ status: 'rejected', reason: expect.any(RedisDirInUseError) });
});

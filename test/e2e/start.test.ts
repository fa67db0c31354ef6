/**
 * `feedback-receiver start` that cannot start: it says why, exits 1, and leaves no redis-server
 * of its own running.
 */
import { once } from 'node:events';
import { mkdtemp, readdir, readlink, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reportedUrl, runCli, type CliProcess } from '../helpers/cli-process.js';

const RULES = fileURLToPath(new URL('../../examples/triage-rules.jsonc', import.meta.url));

/**
 * The processes whose working directory is `dir`. redis-server rewrites its command line (it
 * shows only its address), but it works in its data directory, so that is how it is found.
 */
async function processesIn(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of (await readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => undefined);
    if (cwd === dir) found.push(pid);
  }
  return found;
}

let heldPort: Server | undefined;
afterEach(async () => {
  if (heldPort) await new Promise((resolve) => heldPort!.close(resolve));
  heldPort = undefined;
});

async function takenPort(): Promise<number> {
  heldPort = createServer().listen(0, '127.0.0.1');
  await once(heldPort, 'listening');
  return (heldPort.address() as AddressInfo).port;
}

/** `start` in `cwd`, on free ports, with the example rules in a dry run. */
function runStart(cwd: string, env: Record<string, string> = {}): CliProcess {
  return runCli(
    ['start'],
    {
      WEBHOOK_SECRET: 'start-secret',
      PORT: '0',
      HOST: '127.0.0.1',
      TRIAGE_RULES: RULES,
      TRIAGE_DRY_RUN: 'true',
      ...env,
    },
    { cwd },
  );
}

/** `start` in a new directory of its own, once its receiver listens; `dir` holds its Redis's data. */
async function startListening(
  prefix: string,
  env: Record<string, string> = {},
): Promise<{ start: CliProcess; cwd: string; dir: string }> {
  const cwd = await mkdtemp(join(tmpdir(), prefix));
  const start = runStart(cwd, env);
  await reportedUrl(start, 'receiver listening');
  return { start, cwd, dir: join(cwd, '.feedback-receiver/redis') };
}

describe.runIf(process.platform === 'linux')('feedback-receiver start that fails', () => {
  it.each([
    [
      'a rules file that is not valid',
      async (cwd: string) => {
        await writeFile(join(cwd, 'rules.jsonc'), '{ "rules": [ { "when": 42 } ] }');
        return { TRIAGE_RULES: join(cwd, 'rules.jsonc'), PORT: '0' };
      },
      /TRIAGE_RULES/,
    ],
    ['no handler', async () => ({ PORT: '0' }), /no handlers: set TRIAGE_RULES/],
    [
      'its port in use',
      async () => ({ TRIAGE_RULES: RULES, PORT: String(await takenPort()) }),
      /PORT: port \d+ is already in use/,
    ],
  ])('with %s says why and leaves no redis-server running', async (_case, settings, message) => {
    const cwd = await mkdtemp(join(tmpdir(), 'start-fails-'));
    const start = runCli(
      ['start'],
      {
        WEBHOOK_SECRET: 'start-secret',
        HOST: '127.0.0.1',
        TRIAGE_DRY_RUN: 'true',
        ...(await settings(cwd)),
      },
      { cwd },
    );
    expect(await start.exited(), start.output()).toBe(1);
    expect(start.output()).toMatch(message);
    expect(await processesIn(join(cwd, '.feedback-receiver/redis'))).toEqual([]);
  });

  it('shuts down, its redis-server too, when its terminal is closed (SIGHUP)', async () => {
    const { start, dir } = await startListening('start-hangup-');
    expect(await processesIn(dir), 'its redis-server').toHaveLength(1);
    start.child.kill('SIGHUP');
    expect(await start.exited(), start.output()).toBe(0);
    expect(start.output()).toContain(
      '"signal":"SIGHUP","msg":"shutting down the receiver and worker"',
    );
    await vi.waitFor(async () => expect(await processesIn(dir)).toEqual([]), { timeout: 10_000 });
  });

  it("refuses to start a second redis-server on the data of a killed start's, which still runs", async () => {
    const { start, cwd, dir } = await startListening('start-killed-');
    const [orphan] = await processesIn(dir);
    expect(orphan, 'its redis-server').toBeDefined();
    // SIGKILL leaves no chance to stop it: it runs on, in its own process group.
    start.child.kill('SIGKILL');
    await start.exited();
    const again = runStart(cwd);
    try {
      const outcome = await Promise.race([
        again.exited(),
        reportedUrl(again, 'receiver listening').then(() => 'started beside it'),
      ]);
      expect(outcome, again.output()).toBe(1);
      expect(again.output()).toContain(`a redis-server (pid ${orphan}, redis://127.0.0.1:`);
      expect(again.output()).toContain(`already keeps its data in ${dir}`);
      expect(await processesIn(dir)).toEqual([orphan]);
    } finally {
      again.child.kill('SIGTERM');
      await again.exited();
      process.kill(Number(orphan), 'SIGTERM');
      await vi.waitFor(async () => expect(await processesIn(dir)).toEqual([]), {
        timeout: 10_000,
      });
    }
  });

  it('stops, exit 1, when its redis-server dies under it, so that a supervisor starts it again', async () => {
    const { start, dir } = await startListening('start-redis-died-', {
      SHUTDOWN_TIMEOUT_SECONDS: '1',
    });
    const [redisPid] = await processesIn(dir);
    expect(redisPid, 'its redis-server').toBeDefined();
    process.kill(Number(redisPid), 'SIGKILL');
    try {
      // Its worker's shutdown waits for SHUTDOWN_TIMEOUT_SECONDS, then 5 s more, for a Redis gone.
      await vi.waitFor(() => expect(start.child.exitCode, start.output()).not.toBeNull(), {
        timeout: 30_000,
        interval: 100,
      });
    } finally {
      start.child.kill('SIGKILL');
    }
    expect(start.child.exitCode).toBe(1);
    expect(start.output()).toContain(
      '"signal":"SIGKILL","msg":"the private redis-server exited: shutting down the receiver and worker"',
    );
  }, 45_000);

  it('stops its redis-server when a second Ctrl-C ends it at once', async () => {
    const { start, dir } = await startListening('start-interrupted-');
    const [redisPid] = await processesIn(dir);
    expect(redisPid, 'its redis-server').toBeDefined();
    // Paused, its Redis holds the shutdown up, so the second Ctrl-C surely comes during it.
    process.kill(Number(redisPid), 'SIGSTOP');
    start.child.kill('SIGINT');
    await vi.waitFor(() =>
      expect(start.output()).toContain('shutting down the receiver and worker'),
    );
    start.child.kill('SIGINT');
    expect(await start.exited(), start.output()).toBe(1);
    expect(start.output()).toContain('second signal: exiting now');
    // Told to stop as the process ended; it ends a moment later, having written its data.
    await vi.waitFor(async () => expect(await processesIn(dir)).toEqual([]), { timeout: 10_000 });
  });
});

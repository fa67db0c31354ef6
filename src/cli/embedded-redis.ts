/**
 * A private redis-server for `start` (with a data directory and the append-only file on, so a
 * restart keeps the queue) and for the demo (in a temporary directory).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';

export interface EmbeddedRedis {
  readonly url: string;
  readonly port: number;
  /** The redis-server process, for tests that pause it. */
  readonly process: ChildProcess;
  /** Calls `listener` if the server exits without being asked to (killed, out of memory). */
  onUnaskedExit(listener: (code: number | null, signal: NodeJS.Signals | null) => void): void;
  stop(): Promise<void>;
}

export class RedisNotFoundError extends Error {
  override readonly name = 'RedisNotFoundError';
  constructor() {
    super(
      'REDIS_URL is not set and redis-server is not on the PATH: install Redis (Debian and Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_URL',
    );
  }
}

/**
 * A redis-server already keeps its data in the directory. A second one there would write the same
 * append-only files: whichever rewrites them last drops what the other wrote, deliveries that were
 * acknowledged among them.
 */
export class RedisDirInUseError extends Error {
  override readonly name = 'RedisDirInUseError';
}

/** Ports tried before giving up, when the one picked was taken before redis-server bound it. */
const PORT_TRIES = 5;

/**
 * Which redis-server keeps its data in the directory, and on which port: written once it answers,
 * read before another is started there, removed once it is stopped. Its own process group
 * outlives a `start` killed with SIGKILL, which has no chance to stop it. Before the server
 * answers, the file names the process starting it (`startedBy`): it is created only where none
 * is, so that of two starts at once, one starts a server there.
 */
const SERVER_FILE = 'redis-server.json';

/**
 * @throws {RedisNotFoundError} when redis-server is not on the PATH.
 * @throws {RedisDirInUseError} when the redis-server last started in `dir` still runs.
 * @throws {Error} when it does not answer within 10 seconds, or exits at start.
 */
export async function startEmbeddedRedis(options: {
  dir: string;
  appendOnly: boolean;
  /** Default: a free port. */
  port?: number;
}): Promise<EmbeddedRedis> {
  mkdirSync(options.dir, { recursive: true });
  await claimDir(options.dir);
  try {
    // redis-server cannot listen on port 0 and say which port it got, so a free port is picked
    // first; another process may take it before redis-server binds it, and then another is tried.
    for (let tries = 1; ; tries += 1) {
      const port = options.port ?? (await freePort());
      const started = await startOn(port, options);
      if (started !== 'exited') return started;
      if (options.port !== undefined || tries === PORT_TRIES) {
        throw new Error(`redis-server could not start on port ${port} (is it taken?)`);
      }
    }
  } catch (error) {
    rmSync(join(options.dir, SERVER_FILE), { force: true });
    throw error;
  }
}

async function startOn(
  port: number,
  { dir, appendOnly }: { dir: string; appendOnly: boolean },
): Promise<EmbeddedRedis | 'exited'> {
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      appendOnly ? 'yes' : 'no',
      // With the append-only file, sync every write: an acknowledged delivery survives a crash.
      '--appendfsync',
      'always',
      '--maxmemory-policy',
      'noeviction',
    ],
    // Its own process group: a Ctrl-C in the terminal reaches only us, and we stop it last, once
    // the worker and receiver have drained (stopsWithProcess still ends it however we end).
    { stdio: 'ignore', detached: true },
  );
  const failed = once(child, 'error').then(([error]) => {
    throw (error as NodeJS.ErrnoException).code === 'ENOENT' ? new RedisNotFoundError() : error;
  });
  const exited = once(child, 'exit');
  const stopPinging = new AbortController();
  const outcome = await Promise.race([
    failed,
    exited.then(() => 'exited' as const),
    waitUntilServing(port, child.pid!, stopPinging.signal).then(() => 'up' as const),
  ])
    .catch((error: unknown) => {
      child.kill('SIGKILL');
      throw error;
    })
    .finally(() => stopPinging.abort());
  if (outcome === 'exited') return 'exited';
  writeFileSync(join(dir, SERVER_FILE), JSON.stringify({ pid: child.pid, port }));
  stopsWithProcess(child, exited);
  let asked = false;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    process: child,
    onUnaskedExit: (listener) =>
      void exited.then(([code, signal]) => {
        if (!asked) listener(code as number | null, signal as NodeJS.Signals | null);
      }),
    stop: async () => {
      asked = true;
      if (child.exitCode === null) {
        child.kill('SIGCONT'); // a paused server could not act on SIGTERM
        child.kill('SIGTERM');
        await exited;
      }
      forgetServer(dir, child.pid!);
    },
  };
}

/** The redis-servers this process started and that still run. */
const started = new Set<ChildProcess>();

/**
 * However this process ends (an error after start-up, a second Ctrl-C that exits at once), the
 * redis-servers it started end with it, instead of running on with nobody to stop them.
 */
function stopsWithProcess(child: ChildProcess, exited: Promise<unknown>): void {
  if (started.size === 0) process.on('exit', stopStarted);
  started.add(child);
  void exited.then(() => {
    started.delete(child);
    if (started.size === 0) process.off('exit', stopStarted);
  });
}

function stopStarted(): void {
  for (const child of started) {
    child.kill('SIGCONT'); // a paused server could not act on SIGTERM
    child.kill('SIGTERM');
  }
}

/**
 * Creates SERVER_FILE, naming this process, where none is; one left by a server that no longer
 * answers, or by a start that no longer runs, is replaced.
 *
 * @throws {RedisDirInUseError} when another start is starting a redis-server in `dir`, or the
 *   one that last started there still runs and answers there.
 */
async function claimDir(dir: string): Promise<void> {
  const file = join(dir, SERVER_FILE);
  for (let tries = 1; ; tries += 1) {
    try {
      writeFileSync(file, JSON.stringify({ startedBy: process.pid }), { flag: 'wx' });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    await assertNoServerIn(dir);
    if (tries === 2) {
      throw new RedisDirInUseError(`another start is starting a redis-server in ${dir}`);
    }
    rmSync(file, { force: true });
  }
}

/**
 * @throws {RedisDirInUseError} when the redis-server that last started in `dir` still runs and
 *   answers there, or a start that still runs is starting one there.
 */
async function assertNoServerIn(dir: string): Promise<void> {
  let recorded: { pid?: unknown; port?: unknown; startedBy?: unknown };
  try {
    recorded = JSON.parse(readFileSync(join(dir, SERVER_FILE), 'utf8')) as typeof recorded;
  } catch {
    return; // none started there yet (or by a release that did not say)
  }
  const { pid, port, startedBy } = recorded;
  if (typeof startedBy === 'number' && isRunning(startedBy)) {
    throw new RedisDirInUseError(
      `another start (pid ${startedBy}) is starting a redis-server in ${dir}; a second one would overwrite its files and lose deliveries (if no start runs there, remove ${join(dir, SERVER_FILE)})`,
    );
  }
  if (typeof pid !== 'number' || typeof port !== 'number') return;
  if (!(await answersAs(port, pid))) return;
  throw new RedisDirInUseError(
    `a redis-server (pid ${pid}, redis://127.0.0.1:${port}) already keeps its data in ${dir}: another start runs in this directory, or an earlier one was killed and left it running; a second one would overwrite its files and lose deliveries. Stop it (kill ${pid}), or set REDIS_URL=redis://127.0.0.1:${port} to use it`,
  );
}

/** Waits until the redis-server with this pid answers on the port (not another that took it). */
async function waitUntilServing(port: number, pid: number, stopped: AbortSignal): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!stopped.aborted) {
    if (await answersAs(port, pid)) return;
    if (Date.now() > deadline)
      throw new Error(`redis-server on port ${port} did not answer within 10 seconds`);
    await sleep(50);
  }
}

/** Whether the redis-server with this pid answers on the port, within a second. */
async function answersAs(port: number, pid: number): Promise<boolean> {
  const probe = new Redis(port, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1_000,
    commandTimeout: 1_000,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.info('server')).includes(`\nprocess_id:${pid}\r`);
  } catch {
    return false; // not up (yet), or not answering
  } finally {
    probe.disconnect();
  }
}

/**
 * Removes SERVER_FILE if it still names this server: a server that died unasked may have been
 * followed by another start's before this one stops.
 */
function forgetServer(dir: string, pid: number): void {
  const file = join(dir, SERVER_FILE);
  try {
    if ((JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown }).pid === pid) rmSync(file);
  } catch {
    // gone already, or another's
  }
}

/** Whether a process with this pid runs (this one too: another start in it). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // another user's
  }
}

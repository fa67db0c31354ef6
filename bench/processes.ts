/** Starting and stopping the processes a benchmark measures, and reading what they use. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pinning } from './pinning.js';

export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
export const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export interface Server {
  readonly child: ChildProcess;
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Runs `node <args>` (output discarded) on the server's core and waits until it accepts
 * connections on `port`.
 */
export async function startServer(
  pinning: Pinning,
  args: string[],
  port: number,
  env: Record<string, string> = {},
): Promise<Server> {
  const child = spawn(...pinning.command('server', process.execPath, args), {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = once(child, 'exit');
  const deadline = Date.now() + 15_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`${args.join(' ')} did not listen on ${port}`);
    await sleep(50);
  }
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `feedback-receiver serve` as production runs it, on the server's core. */
export function startReceiverUnderTest(
  pinning: Pinning,
  port: number,
  {
    secret,
    redisUrl,
    prefix,
    env = {},
  }: { secret: string; redisUrl: string; prefix: string; env?: Record<string, string> },
): Promise<Server> {
  return startServer(pinning, [CLI, 'serve'], port, {
    ...env,
    WEBHOOK_SECRET: secret,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    PORT: String(port),
    HOST: '127.0.0.1',
    NODE_ENV: 'production',
  });
}

/** Waits until `url` (a probe such as the worker's /readyz) answers 200. */
export async function untilReady(url: string, withinMs = 15_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const ready = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) return;
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200`);
    await sleep(50);
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Resident memory of a process in MiB, from /proc. */
export function rssMiB(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
    return kib / 1024;
  } catch {
    return Number.NaN;
  }
}

/** CPU time (user + system) a process has used so far, in microseconds, from /proc. */
export function cpuMicros(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    // Fields after the command name, which sits in parentheses and may hold spaces.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks / CLOCK_TICKS_PER_SECOND) * 1e6;
  } catch {
    return Number.NaN;
  }
}

/** USER_HZ, which Linux fixes at 100 for /proc on every architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * Runs a node script (a load generator) to its end, away from the server's core, and returns its
 * last line of output, parsed as JSON.
 */
export async function runJsonProcess<T>(
  pinning: Pinning,
  script: string,
  argument: unknown,
): Promise<T> {
  const child = spawn(
    ...pinning.command('rest', process.execPath, [script, JSON.stringify(argument)]),
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`${script} exited with ${code}`);
  return JSON.parse(output.trim().split('\n').at(-1) ?? 'null') as T;
}

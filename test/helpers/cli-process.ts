/** Runs the built CLI (`dist/cli/main.js`) as a separate process, as a user would. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { expect, vi } from 'vitest';

export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface CliProcess {
  readonly child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code once the process ends. */
  exited(): Promise<number | null>;
}

export function runCli(
  args: string[],
  env: Record<string, string>,
  {
    cwd,
    node = process.execPath,
    nodeArgs = [],
  }: {
    cwd?: string;
    /** The Node binary to run it on; default: the one running the tests. */
    node?: string;
    nodeArgs?: readonly string[];
  } = {},
): CliProcess {
  const child = spawn(node, [...nodeArgs, CLI, ...args], {
    // Several workers run at once in tests: each takes a free port for its probes.
    env: { PATH: process.env.PATH ?? '', METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd ? { cwd } : {}),
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  return { child, output: () => output, exited: () => exit };
}

/**
 * The URL a process reports in its log line `message` (`{"url": ..., "msg": message}`), once it
 * has written it. Processes listen on port 0 and say which port they got, so no two race for one.
 */
export async function reportedUrl(cli: CliProcess, message: string): Promise<string> {
  const line = new RegExp(`"url":"([^"]+)"[^\\n]*"msg":"${message.replace(/[()]/g, '\\$&')}"`);
  return vi.waitFor(
    () => {
      const found = line.exec(cli.output())?.[1];
      if (found === undefined) throw new Error(`no "${message}" line yet:\n${cli.output()}`);
      return found;
    },
    { timeout: 10_000, interval: 20 },
  );
}

/**
 * Starts `feedback-receiver serve` on 127.0.0.1, on the port it is given or else on one the system
 * picks (PORT=0), and resolves with the URL the receiver says it listens on.
 */
export async function startServe(
  env: Record<string, string>,
): Promise<{ cli: CliProcess; url: string }> {
  const cli = runCli(['serve'], { PORT: '0', HOST: '127.0.0.1', ...env });
  try {
    return { cli, url: await reportedUrl(cli, 'receiver listening') };
  } catch (error) {
    cli.child.kill('SIGKILL');
    throw error;
  }
}

/** Resolves once a `work` process says it started; fails, with its output, if it exits first. */
export async function workerStarted(cli: CliProcess): Promise<CliProcess> {
  await vi.waitFor(
    () =>
      expect(
        cli.output().includes('"msg":"worker started"') || cli.child.exitCode !== null,
        'the worker to start',
      ).toBeTruthy(),
    { timeout: 10_000 },
  );
  expect(cli.output()).toContain('worker started');
  return cli;
}

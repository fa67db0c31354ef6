/** Runs the built CLI (`dist/cli/main.js`) as a separate process, as a user would. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';
import { waitFor } from './wait-for.js';

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
  { cwd }: { cwd?: string } = {},
): CliProcess {
  const child = spawn(process.execPath, [CLI, ...args], {
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

/** Starts `feedback-receiver serve` on 127.0.0.1 (`env.PORT`, or a free port) until healthy. */
export async function startServe(
  env: Record<string, string>,
): Promise<{ cli: CliProcess; url: string }> {
  const port = env.PORT === undefined ? await freePort() : Number(env.PORT);
  const cli = runCli(['serve'], { PORT: String(port), HOST: '127.0.0.1', ...env });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    () =>
      fetch(`${url}/healthz`).then(
        (response) => response.ok,
        () => false,
      ),
    { timeoutMs: 10_000, what: `feedback-receiver serve on ${url}` },
  ).catch((error: Error) => {
    cli.child.kill('SIGKILL');
    throw new Error(`${error.message}\n${cli.output()}`);
  });
  return { cli, url };
}

/** Runs the built CLI (`dist/cli/main.js`) as a separate process, as a user would. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';

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

/**
 * Starts `feedback-receiver serve` on 127.0.0.1, on the port it is given or else on one the system
 * picks (PORT=0), and resolves with the URL the receiver says it listens on.
 */
export async function startServe(
  env: Record<string, string>,
): Promise<{ cli: CliProcess; url: string }> {
  const cli = runCli(['serve'], { PORT: '0', HOST: '127.0.0.1', ...env });
  try {
    const url = await vi.waitFor(
      () => {
        const listening = /"url":"([^"]+)"[^\n]*"msg":"receiver listening"/.exec(cli.output());
        if (!listening) throw new Error(`serve has not said where it listens:\n${cli.output()}`);
        return listening[1]!;
      },
      { timeout: 10_000, interval: 20 },
    );
    return { cli, url };
  } catch (error) {
    cli.child.kill('SIGKILL');
    throw error;
  }
}

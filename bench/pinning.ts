/**
 * Where the bench's processes run. On two shared cores the load generator, Redis and the server
 * under test fight for CPU and a round's figure says more about that fight than about the server;
 * so, where the machine has two cores or more and `taskset`, the server under test runs alone on
 * one core and everything else (load generator, Redis, this process) on another.
 */
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';

export type Role = 'server' | 'rest';

export interface Pinning {
  /** False where the machine has one core or no `taskset`: nothing is pinned. */
  readonly pinned: boolean;
  /** The command and arguments that start `command` on the role's core. */
  command(role: Role, command: string, args: readonly string[]): [string, string[]];
  /** Moves a running process, all its threads, to the role's core. */
  pin(pid: number, role: Role): void;
  /** One sentence for the report. */
  readonly description: string;
}

const CORES: Record<Role, number> = { server: 1, rest: 0 };

export function choosePinning(): Pinning {
  const pinned = cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0;
  if (!pinned) {
    return {
      pinned,
      command: (_role, command, args) => [command, [...args]],
      pin: () => {},
      description:
        'Nothing was pinned (one core, or no `taskset`): the load generator, Redis and the server under test shared the cores, so figures swing more between rounds.',
    };
  }
  return {
    pinned,
    // taskset execs the command, so the process keeps taskset's pid.
    command: (role, command, args) => ['taskset', ['-c', String(CORES[role]), command, ...args]],
    pin(pid, role) {
      const result = spawnSync('taskset', ['-a', '-p', '-c', String(CORES[role]), String(pid)]);
      if (result.status !== 0) throw new Error(`taskset could not pin ${pid}: ${result.stderr}`);
    },
    description: `The server under test ran alone on core ${CORES.server} (\`taskset\`); the load generator, Redis and the bench itself on core ${CORES.rest}. In the worker bench the worker under test (this process) took core ${CORES.server} and Redis kept core ${CORES.rest}; end to end, \`serve\` and \`work\` shared core ${CORES.server}.`,
  };
}

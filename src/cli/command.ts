/** What a command of `feedback-receiver` declares; main.ts parses and dispatches. */
import type { ParseArgsConfig } from 'node:util';

export type OptionValues = Record<string, string | boolean | undefined>;

export interface Command {
  /** One or two words: `serve`, `hooks register`. */
  readonly name: string;
  readonly summary: string;
  /** The whole `--help` text. */
  readonly help: string;
  readonly options?: NonNullable<ParseArgsConfig['options']>;
  /** How many positional arguments it takes. Default: none. */
  readonly positionals?: { readonly min: number; readonly max: number };
  run(values: OptionValues, positionals: string[]): Promise<void>;
}

/** The command line was wrong: exit code 2, and the message says how to use it. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export function requireOption(values: OptionValues, name: string, command: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') {
    throw new UsageError(`${command} needs --${name}; see feedback-receiver ${command} --help`);
  }
  return value;
}

/** The `--limit` option of the listing commands: a whole number of at least 1 (and a safe one). */
export const LIMIT_OPTION = { limit: { type: 'string', default: '50' } } as const;

export function parseLimit(values: OptionValues): number {
  const limit = Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) {
    throw new UsageError('--limit takes a whole number, 1 or more');
  }
  // Redis takes 64-bit counts: 1e20 reached it and came back as a script's error.
  if (!Number.isSafeInteger(limit)) {
    throw new UsageError(`--limit takes at most ${Number.MAX_SAFE_INTEGER}`);
  }
  return limit;
}

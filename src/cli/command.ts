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
  // Redis takes 64-bit counts: 1e20 reached it and came back as a script's error.
  return parseWholeNumber(values, 'limit', 1);
}

/**
 * A numeric option, in digits only, as config.ts reads the environment's: `Number` alone takes
 * `0x10`, `1e3`, ` 5` and (as 0) an empty value, none of which an operator means as a count.
 * @throws {UsageError} for anything else, or a number outside min..max.
 */
export function parseWholeNumber(
  values: OptionValues,
  name: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const text = values[name];
  const value = typeof text === 'string' && /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) {
    throw new UsageError(`--${name} takes a whole number from ${min} to ${max}`);
  }
  return value;
}

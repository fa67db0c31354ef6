import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

export type { Logger };

/**
 * Paths pino censors wherever they appear in a log object. Secrets, tokens and signatures are
 * also kept out of log calls in the first place; this is the net under that rule.
 */
export const REDACTED_PATHS = [
  'secret',
  'secrets',
  'token',
  'authorization',
  '*.secret',
  '*.secrets',
  '*.token',
  '*.authorization',
  'headers.authorization',
  'headers.cookie',
  'headers["x-ybug-signature"]',
  'headers["webhook-signature"]',
  'headers["svix-signature"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-ybug-signature"]',
  'req.headers["webhook-signature"]',
  'req.headers["svix-signature"]',
];

export interface LoggerOptions {
  readonly level: LogLevel;
  /** Human-readable lines (pino-pretty) instead of JSON. */
  readonly pretty?: boolean;
  /** Where lines go; stdout by default. Tests pass a stream to read every line. */
  readonly destination?: pino.DestinationStream;
}

export function createLogger({ level, destination, pretty = false }: LoggerOptions): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'feedback-receiver' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    ...(pretty && !destination ? { transport: { target: 'pino-pretty' } } : {}),
  };
  return destination ? pino(options, destination) : pino(options);
}

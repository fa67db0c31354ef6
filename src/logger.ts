import { pino, type Logger } from 'pino';
import { traceIdsForLog } from './tracing/tracer.js';

export type { Logger };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const CENSOR = '[redacted]';

/**
 * Keys whose values never reach a log line, whatever object they sit in (compared in lower case,
 * as HTTP header names are). Secrets, tokens and signatures are also kept out of log calls in the
 * first place; this is the net under that rule.
 */
export const REDACTED_KEYS: ReadonlySet<string> = new Set([
  'secret',
  'secrets',
  'token',
  'authorization',
  'cookie',
  'x-ybug-signature',
  'webhook-signature',
  'svix-signature',
]);

/** How deep the net reaches into a logged object (`req.headers.authorization` is depth 2). */
const REDACTED_DEPTH = 4;

/**
 * The logged object with every redacted key's value censored, at any depth up to
 * REDACTED_DEPTH; copied only where something is censored, so the caller's object is untouched
 * and a line with nothing to censor costs one pass over its keys. (pino's own `redact` would
 * need a wildcard path per key and depth, and matches every path against every value of every
 * line.)
 */
export function censorSecrets<T extends object>(value: T, depth = 0): T {
  const fields = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(fields)) {
    const field = fields[key];
    let censored = field;
    if (REDACTED_KEYS.has(key.toLowerCase())) {
      censored = CENSOR;
    } else if (field instanceof Error) {
      censored = serializeError(field);
    } else if (depth < REDACTED_DEPTH && isPlainData(field)) {
      censored = censorSecrets(field, depth + 1);
    }
    if (censored !== field) {
      copy ??= Array.isArray(value)
        ? ([...value] as unknown as Record<string, unknown>)
        : { ...fields };
      copy[key] = censored;
    }
  }
  return (copy ?? value) as T;
}

/** How many causes deep an error is logged. */
const CAUSE_DEPTH = 3;

/**
 * An error as a log line shows it: its name, message, stack, `code` and causes, and nothing else.
 * Errors carry more than they say: ioredis puts the command and its arguments on its errors (for
 * BullMQ's add, the whole delivery), which pino's own serializer would copy into the line.
 */
export function serializeError(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  return {
    type: error.name,
    message: error.message,
    stack: error.stack,
    ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
    ...(error.cause !== undefined && depth < CAUSE_DEPTH
      ? {
          cause:
            error.cause instanceof Error
              ? serializeError(error.cause, depth + 1)
              : String(error.cause),
        }
      : {}),
  };
}

/** Objects and arrays as data; not errors, buffers or class instances, which have serializers. */
function isPlainData(value: unknown): value is object {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return true;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

export interface LoggerOptions {
  readonly level: LogLevel;
  /** Human-readable lines (pino-pretty) instead of JSON. */
  readonly pretty?: boolean;
  /** Where lines go; stdout by default. Tests pass a stream to read every line. */
  readonly destination?: pino.DestinationStream;
  /**
   * Each line written inside a traced request or run carries its `trace_id` and `span_id`
   * (TracingConfig set). Without tracing no line pays for the question.
   */
  readonly traceIds?: boolean;
}

export function createLogger({
  level,
  destination,
  pretty = false,
  traceIds = false,
}: LoggerOptions): Logger {
  const options: pino.LoggerOptions = {
    level,
    ...(traceIds ? { mixin: traceIdsForLog } : {}),
    base: { service: 'feedback-receiver' },
    formatters: { log: (object) => censorSecrets(object) },
    serializers: { err: serializeError },
    // Child loggers' bindings do not pass through `formatters.log`: pino censors these keys of
    // theirs (top-level paths only, which cost nothing for the other keys).
    redact: { paths: [...REDACTED_KEYS].map((key) => `["${key}"]`), censor: CENSOR },
    ...(pretty && !destination ? { transport: { target: 'pino-pretty' } } : {}),
  };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * The one place that reads the environment. Everything is validated once, at start, and the
 * result is frozen and passed down; a wrong value stops the process with a message that names
 * the variable and what it expects.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { parseByteSize } from './byte-size.js';
import { SIGNATURE_SCHEMES, type SignatureSchemeName } from './webhooks/signature-scheme.js';
import { decodeStandardWebhookSecret } from './webhooks/standard-webhooks.js';

export const INVALID_PAYLOAD_MODES = ['quarantine', 'reject'] as const;
export type InvalidPayloadMode = (typeof INVALID_PAYLOAD_MODES)[number];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const integer = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, `expected a whole number from ${min} to ${max}`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `expected a whole number from ${min} to ${max}`);

const byteSize = z.string().transform((text, ctx) => {
  const bytes = parseByteSize(text);
  if (bytes === undefined || bytes < 1) {
    ctx.addIssue({ code: 'custom', message: 'expected a size such as 1048576, 512kb or 1mb' });
    return z.NEVER;
  }
  return bytes;
});

/** An HTTP header name as RFC 9110 allows it (a "token"). */
const headerName = z
  .string()
  .trim()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'expected an HTTP header name');

const EnvSchema = z.object({
  PORT: integer(0, 65535).default(3000),
  HOST: z.string().trim().min(1).default('0.0.0.0'),
  REDIS_URL: z
    .string()
    .trim()
    .regex(/^rediss?:\/\/\S+$/, 'expected a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379'),
  QUEUE_PREFIX: z
    .string()
    .trim()
    .regex(/^[^\s:]+$/, 'expected a key prefix without spaces or ":"')
    .default('feedback-receiver'),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  WEBHOOK_SECRET: z.string().optional(),
  WEBHOOK_SECRET_FILE: z.string().trim().min(1).optional(),
  SIGNATURE_SCHEME: z.enum(SIGNATURE_SCHEMES).default('hmac-sha256'),
  SIGNATURE_HEADER: headerName.default('X-Ybug-Signature'),
  SIGNATURE_TOLERANCE_SECONDS: integer(1).default(300),
  BODY_LIMIT: byteSize.default(1024 * 1024),
  DEDUPE_TTL_SECONDS: integer(1).default(7 * 24 * 60 * 60),
  INVALID_PAYLOAD: z.enum(INVALID_PAYLOAD_MODES).default('quarantine'),
});

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly redisUrl: string;
  /** BullMQ's key prefix; every key this service writes starts with it. */
  readonly queuePrefix: string;
  readonly logLevel: LogLevel;
  readonly webhook: WebhookConfig;
}

export interface WebhookConfig {
  readonly scheme: SignatureSchemeName;
  /** Every accepted secret, in the order given: index 0 is the newest by convention. */
  readonly secrets: readonly string[];
  /** The header that carries the signature under the `hmac-sha256` scheme. */
  readonly signatureHeader: string;
  readonly toleranceSeconds: number;
  readonly bodyLimitBytes: number;
  readonly dedupeTtlSeconds: number;
  readonly invalidPayload: InvalidPayloadMode;
}

/** A configuration problem; its message is meant for the person who started the process. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export interface LoadConfigOptions {
  readFile?: (path: string) => string;
}

/**
 * Validates the environment and returns a frozen configuration.
 *
 * @throws {ConfigError} naming every variable that is wrong or missing.
 * @example
 * const config = loadConfig({ WEBHOOK_SECRET: 'dev-secret' });
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  { readFile = (path) => readFileSync(path, 'utf8') }: LoadConfigOptions = {},
): Config {
  // An empty variable (`PORT=`) means "not set", as most shells and compose files intend.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const vars = parsed.data;
  const secrets = readSecrets(vars.WEBHOOK_SECRET, vars.WEBHOOK_SECRET_FILE, readFile);
  if (vars.SIGNATURE_SCHEME === 'standard-webhooks') {
    secrets.forEach((secret, index) => {
      if (decodeStandardWebhookSecret(secret) === undefined) {
        throw new ConfigError(
          `Invalid configuration:\n  WEBHOOK_SECRET: secret #${index + 1} is not of the form whsec_<base64>, which SIGNATURE_SCHEME=standard-webhooks needs`,
        );
      }
    });
  }

  return deepFreeze({
    port: vars.PORT,
    host: vars.HOST,
    redisUrl: vars.REDIS_URL,
    queuePrefix: vars.QUEUE_PREFIX,
    logLevel: vars.LOG_LEVEL,
    webhook: {
      scheme: vars.SIGNATURE_SCHEME,
      secrets,
      signatureHeader: vars.SIGNATURE_HEADER,
      toleranceSeconds: vars.SIGNATURE_TOLERANCE_SECONDS,
      bodyLimitBytes: vars.BODY_LIMIT,
      dedupeTtlSeconds: vars.DEDUPE_TTL_SECONDS,
      invalidPayload: vars.INVALID_PAYLOAD,
    },
  });
}

function readSecrets(
  inline: string | undefined,
  file: string | undefined,
  readFile: (path: string) => string,
): string[] {
  if (inline !== undefined && file !== undefined) {
    throw new ConfigError(
      'Invalid configuration:\n  WEBHOOK_SECRET and WEBHOOK_SECRET_FILE are both set; set one of them',
    );
  }
  let secrets: string[];
  let source: string;
  if (file !== undefined) {
    source = 'WEBHOOK_SECRET_FILE';
    let text: string;
    try {
      text = readFile(file);
    } catch (error) {
      const reason = error instanceof Error && 'code' in error ? String(error.code) : 'unreadable';
      throw new ConfigError(
        `Invalid configuration:\n  WEBHOOK_SECRET_FILE: cannot read ${file} (${reason})`,
      );
    }
    secrets = text.split(/\r?\n/);
  } else {
    source = 'WEBHOOK_SECRET';
    secrets = (inline ?? '').split(',');
  }
  secrets = secrets.map((secret) => secret.trim()).filter((secret) => secret.length > 0);
  if (secrets.length === 0) {
    // Fail closed: a receiver without a secret would have to accept anything.
    throw new ConfigError(
      inline === undefined && file === undefined
        ? 'Invalid configuration:\n  WEBHOOK_SECRET: required (or WEBHOOK_SECRET_FILE, a file with one secret per line); the receiver does not start without a secret'
        : `Invalid configuration:\n  ${source}: holds no secret`,
    );
  }
  return secrets;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

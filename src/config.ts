/**
 * The one place that reads the environment. Each role (receiver, worker) validates what it reads
 * once, at start; the result is frozen and passed down. A wrong value stops the process with a
 * message that names the variable and what it expects.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import bytes from 'bytes';
import { LOG_LEVELS } from './logger.js';
import { parseRedisUrl, RedisUrlError } from './queue/redis-url.js';
import { SIGNATURE_SCHEMES, type SignatureSchemeName } from './webhooks/signature-scheme.js';
import { decodeStandardWebhookSecret } from './webhooks/standard-webhooks.js';

export const INVALID_PAYLOAD_MODES = ['quarantine', 'reject'] as const;
export type InvalidPayloadMode = (typeof INVALID_PAYLOAD_MODES)[number];

import type { LogLevel } from './logger.js';
import { DEFAULT_SIMILAR_THRESHOLD } from './similar/grouping.js';
import { MOST_KEPT } from './history/delivery-history.js';
export type { LogLevel };

const integer = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, `expected a whole number from ${min} to ${max}`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `expected a whole number from ${min} to ${max}`);

const TEN_YEARS_SECONDS = 315_360_000;

/**
 * A size as Express and body-parser write it: `1048576`, `512kb`, `1mb` (1kb = 1024 bytes). Only
 * these forms: `bytes.parse` reads whatever else by its leading digits (`1m`, `10s`: 1 and 10
 * bytes), which would answer every delivery 413.
 */
const SIZE = /^(\d+\s*b?|\d+(\.\d+)?\s*[kmgtp]b)$/i;
const byteSize = z.string().transform((text, ctx) => {
  const size = SIZE.test(text.trim()) ? bytes.parse(text.trim()) : null;
  if (size === null || !Number.isSafeInteger(size) || size < 1) {
    ctx.addIssue({ code: 'custom', message: 'expected a size such as 1048576, 512kb or 1mb' });
    return z.NEVER;
  }
  return size;
});

/** An HTTP header name as RFC 9110 allows it (a "token"). */
const headerName = z
  .string()
  .trim()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'expected an HTTP header name');

const httpUrl = z
  .string()
  .trim()
  .regex(/^https?:\/\/[^\s/]+(\/\S*)?$/, 'expected an http:// or https:// URL')
  .transform((url) => url.replace(/\/+$/, ''));

/** `key=value,key=value`, as OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES take them. */
const keyValueList = (what: string) =>
  z
    .string()
    .trim()
    .regex(/^[^=,\s]+=[^,]*(,\s*[^=,\s]+=[^,]*)*$/, `expected ${what} list: key=value,key=value`);

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;

const TRACES_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

const booleanFlag = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^(true|false|1|0|yes|no)$/, 'expected true or false')
  .transform((text) => ['true', '1', 'yes'].includes(text));

/**
 * OpenTelemetry's standard variables, checked like every other; the SDK reads them itself
 * (src/tracing/). Tracing is on when an OTLP endpoint is set, unless OTEL_SDK_DISABLED; only then
 * are they checked, so that a platform that sets some of them for every container does not stop
 * a service that does not trace.
 */
const TracingOnEnv = z.object({
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(OTLP_PROTOCOLS).optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.enum(OTLP_PROTOCOLS).optional(),
  OTEL_EXPORTER_OTLP_HEADERS: keyValueList('a header').optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: keyValueList('a header').optional(),
  OTEL_SERVICE_NAME: z.string().trim().min(1).optional(),
  OTEL_RESOURCE_ATTRIBUTES: keyValueList('an attribute').optional(),
  OTEL_TRACES_SAMPLER: z.enum(TRACES_SAMPLERS).default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z
    .string()
    .trim()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'expected a ratio from 0 to 1')
    .transform(Number)
    .default(1),
  OTEL_SDK_DISABLED: booleanFlag.default(false),
  OTEL_BSP_SCHEDULE_DELAY: integer(0).optional(),
  OTEL_BSP_EXPORT_TIMEOUT: integer(0).optional(),
  OTEL_BSP_MAX_QUEUE_SIZE: integer(1).optional(),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: integer(1).optional(),
});

/** Read as they are; checked by TracingOnEnv once an endpoint says tracing is on. */
const TracingEnv = Object.fromEntries(
  Object.keys(TracingOnEnv.shape).map((name) => [name, z.string().optional()]),
) as Record<keyof typeof TracingOnEnv.shape, z.ZodOptional<z.ZodString>>;

/** Read by every role. */
const SharedEnv = {
  REDIS_URL: z
    .string()
    .trim()
    .superRefine((url, ctx) => {
      try {
        parseRedisUrl(url);
      } catch (error) {
        if (!(error instanceof RedisUrlError)) throw error;
        // The message never repeats the URL: it may hold a password.
        ctx.addIssue({ code: 'custom', message: error.message });
      }
    })
    .default('redis://127.0.0.1:6379'),
  QUEUE_PREFIX: z
    .string()
    .trim()
    .regex(/^[^\s:{}]+$/, 'expected a key prefix without spaces, ":", "{" or "}"')
    .default('feedback-receiver'),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  LOG_PRETTY: booleanFlag.default(false),
  // At most ten years: past some thousand years the delivery history's expiry times reached Redis as
  // 1e+17, which it refuses, and every history write failed. The retention, which bounds the
  // queues' trim (its age in ms), the same.
  DEDUPE_TTL_SECONDS: integer(1, TEN_YEARS_SECONDS).default(7 * 24 * 60 * 60),
  COMPLETED_JOB_RETENTION_SECONDS: integer(1, TEN_YEARS_SECONDS).default(24 * 60 * 60),
  ACK_REPLICAS: integer(0, 100).default(0),
  ACK_REPLICAS_TIMEOUT_MS: integer(1, 60_000).default(1_000),
  SIMILAR: z.enum(['on', 'off']).default('off'),
  SIMILAR_THRESHOLD: z
    .string()
    .trim()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'expected a score from 0 to 1')
    .transform(Number)
    .default(DEFAULT_SIMILAR_THRESHOLD),
  SIMILAR_KEEP: integer(1, 10_000_000).default(100_000),
  ...TracingEnv,
};

const ReceiverEnv = z.object({
  ...SharedEnv,
  PORT: integer(0, 65535).default(3000),
  HOST: z.string().trim().min(1).default('0.0.0.0'),
  WEBHOOK_SECRET: z.string().optional(),
  WEBHOOK_SECRET_FILE: z.string().trim().min(1).optional(),
  SIGNATURE_SCHEME: z.enum(SIGNATURE_SCHEMES).default('hmac-sha256'),
  SIGNATURE_HEADER: headerName.default('X-Ybug-Signature'),
  SIGNATURE_TOLERANCE_SECONDS: integer(1).default(300),
  BODY_LIMIT: byteSize.default(1024 * 1024),
  INVALID_PAYLOAD: z.enum(INVALID_PAYLOAD_MODES).default('quarantine'),
  QUARANTINE_MAX_ENTRIES: integer(1).default(10_000),
  QUARANTINE_MAX_AGE_DAYS: integer(1, 3650).default(7),
  QUARANTINE_MAX_BYTES: byteSize.default(100 * 1024 * 1024),
  ADMIN_TOKEN: z.string().trim().min(16, 'expected at least 16 characters').optional(),
  // No default for the receiver: unset, its /metrics is on PORT behind ADMIN_TOKEN.
  METRICS_PORT: integer(0, 65535).optional(),
  TRACE_URL_TEMPLATE: z
    .string()
    .trim()
    .regex(/^https?:\/\/\S*\{traceId\}\S*$/, 'expected an http(s) URL with {traceId} in it')
    .optional(),
});

const WorkerEnv = z.object({
  ...SharedEnv,
  FEEDBACK_API_URL: httpUrl.optional(),
  FEEDBACK_API_TOKEN: z.string().optional(),
  FEEDBACK_API_TOKEN_FILE: z.string().trim().min(1).optional(),
  FEEDBACK_API_RATE_LIMIT: integer(1).default(100),
  FEEDBACK_API_TIMEOUT_SECONDS: integer(1, 600).default(10),
  HANDLERS: z.string().optional(),
  WORKER_CONCURRENCY: integer(1, 1000).default(10),
  WORKER_LOCK_SECONDS: integer(1, 3600).default(30),
  SHUTDOWN_TIMEOUT_SECONDS: integer(0, 3600).default(30),
  METRICS_PORT: integer(0, 65535).default(9464),
  TRIAGE_RULES: z.string().trim().min(1).optional(),
  TRIAGE_DRY_RUN: booleanFlag.default(false),
  CONSOLE_URL: httpUrl.optional(),
  HISTORY_MAX_DELIVERIES: integer(1, 100_000_000).default(MOST_KEPT),
});

const ProbeEnv = z.object({
  PORT: ReceiverEnv.shape.PORT,
  METRICS_PORT: WorkerEnv.shape.METRICS_PORT,
});

/** Read by every role. */
export interface SimilarConfig {
  /** A delivery joins its best match's group from this score (0 to 1). */
  readonly threshold: number;
  /** Most deliveries kept per project; the oldest are dropped past it. */
  readonly keep: number;
}

export interface SharedConfig {
  readonly redisUrl: string;
  /** False when REDIS_URL was not set and `redisUrl` is the default (`start` then runs its own). */
  readonly redisUrlFromEnv: boolean;
  /**
   * BullMQ's key prefix; every key this service writes starts with it. QUEUE_PREFIX as given,
   * or on a cluster-mode Redis in braces (`{feedback-receiver}`): a hash tag that puts every key
   * in one slot, which BullMQ's scripts and ours need.
   */
  readonly queuePrefix: string;
  readonly logLevel: LogLevel;
  /** Human-readable log lines instead of JSON, for people at a terminal. */
  readonly logPretty: boolean;
  /** How long a delivery (and each handler run of it) is remembered, whatever happens to its job. */
  readonly dedupeTtlSeconds: number;
  /**
   * Grouping similar feedback (docs/similar.md): SIMILAR_THRESHOLD and SIMILAR_KEEP; undefined
   * when SIMILAR=off.
   */
  readonly similar: SimilarConfig | undefined;
  /**
   * How long finished deliveries and handler runs are kept for inspection (at most 10 000 of
   * each). Deduplication does not depend on them; failed runs, the dead letter, are kept 30 days.
   */
  readonly completedJobRetentionSeconds: number;
  /**
   * How many replicas must hold a write, and for how long to wait: the receiver's deliveries
   * before it acknowledges them, the worker's records of completed runs before it forgets them.
   */
  readonly ackReplicas: { readonly replicas: number; readonly timeoutMs: number };
  /** OpenTelemetry traces, when an OTLP endpoint is set; undefined: off, nothing loaded. */
  readonly tracing: TracingConfig | undefined;
}

export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/**
 * What the service decides about tracing. The SDK reads the rest of the OTEL_* variables itself
 * (headers, sampler, batching, resource attributes), after they were checked here.
 */
export interface TracingConfig {
  /** Where spans are sent (an OTLP/HTTP traces URL); never logged with its headers. */
  readonly endpoint: string;
  readonly protocol: OtlpProtocol;
  /** OTEL_SERVICE_NAME, or `service.name` in OTEL_RESOURCE_ATTRIBUTES, or the role's default. */
  readonly serviceName: string;
  /** OTEL_TRACES_SAMPLER and its ratio (OTEL_TRACES_SAMPLER_ARG, 1 by default). */
  readonly sampler: { readonly name: TracesSampler; readonly ratio: number };
}

export type TracesSampler = (typeof TRACES_SAMPLERS)[number];

/** The first Node that OpenTelemetry's SDK runs on. */
export const TRACING_MIN_NODE = '22.15.0';

/** The service names of the two roles, when OTEL_SERVICE_NAME does not say otherwise. */
export const DEFAULT_SERVICE_NAMES = {
  receiver: 'feedback-receiver',
  worker: 'feedback-receiver-worker',
} as const;

/** What `feedback-receiver serve` needs. */
export interface ReceiverConfig extends SharedConfig {
  readonly port: number;
  readonly host: string;
  readonly webhook: WebhookConfig;
  /** Enables the dashboard at /admin/queues, for requests that carry it. */
  readonly adminToken: string | undefined;
  /**
   * Where the receiver serves /healthz, /readyz and /metrics apart from the webhook port.
   * Undefined: /metrics is served on PORT to requests with the admin token, or not at all.
   */
  readonly metricsPort: number | undefined;
  /** Makes the console's trace ids links: a URL with `{traceId}` in it (TRACE_URL_TEMPLATE). */
  readonly traceUrlTemplate: string | undefined;
  readonly quarantine: QuarantineConfig;
}

/** What the quarantine keeps at most; each new entry drops the oldest beyond these. */
export interface QuarantineConfig {
  readonly maxEntries: number;
  /** Counted from when an entry was last received. */
  readonly maxAgeDays: number;
  /** The bodies' bytes together; at least BODY_LIMIT, so the largest body fits. */
  readonly maxBytes: number;
}

export interface WebhookConfig {
  readonly scheme: SignatureSchemeName;
  /** Every accepted secret, in the order given: index 0 is the newest by convention. */
  readonly secrets: readonly string[];
  /** The header that carries the signature under the `hmac-sha256` scheme. */
  readonly signatureHeader: string;
  readonly toleranceSeconds: number;
  readonly bodyLimitBytes: number;
  readonly invalidPayload: InvalidPayloadMode;
}

/** What `feedback-receiver work` needs. */
export interface WorkerConfig extends SharedConfig {
  readonly api: ApiConfig;
  /** Module paths of custom handlers, as given in HANDLERS (resolved from the working directory). */
  readonly handlerModules: readonly string[];
  readonly concurrency: number;
  /** How long a job's lock lasts; a worker that dies mid-job loses its jobs to others after it. */
  readonly lockSeconds: number;
  readonly shutdownTimeoutSeconds: number;
  /** Where the worker serves /healthz, /readyz and /metrics. */
  readonly metricsPort: number;
  /** Auto-triage, when TRIAGE_RULES names a rules file. */
  readonly triage: TriageConfig | undefined;
  /** Most deliveries the delivery history keeps; past it the worker drops the oldest. */
  readonly historyMaxDeliveries: number;
}

export interface ApiConfig {
  /** Base URL of the feedback API, without a trailing slash; undefined when not set. */
  readonly baseUrl: string | undefined;
  readonly token: string | undefined;
  /** Requests a minute, all worker processes together. */
  readonly rateLimitPerMinute: number;
  readonly timeoutMs: number;
}

export interface TriageConfig {
  readonly rulesPath: string;
  readonly dryRun: boolean;
  /**
   * The console's public base URL (CONSOLE_URL, no trailing slash), for the links a rule's
   * notify posts; undefined: links are paths.
   */
  readonly consoleUrl: string | undefined;
  /**
   * Reads the variable a rule's `notify.urlFrom` names, from the environment this configuration
   * was loaded from: the rules file decides which, so they cannot be listed here.
   */
  readVariable(name: string): string | undefined;
}

/** Every environment variable the service reads; .env.example documents each (a test checks). */
export const ENVIRONMENT_VARIABLES: readonly string[] = [
  ...new Set([...Object.keys(ReceiverEnv.shape), ...Object.keys(WorkerEnv.shape)]),
];

/** The ports a container's health check probes: the receiver's, and the worker's probes. */
export function loadProbePorts(env: Env = process.env): { port: number; metricsPort: number } {
  const vars = parseEnv(ProbeEnv, env);
  return { port: vars.PORT, metricsPort: vars.METRICS_PORT };
}

/**
 * The webhook secret to register a hook with (`hooks register`): the first of WEBHOOK_SECRET or
 * WEBHOOK_SECRET_FILE, the newest by convention; undefined when neither is set.
 *
 * @throws {ConfigError} when both are set, or the file cannot be read or holds no secret.
 */
export function loadWebhookSecret(
  env: Env = process.env,
  { readFile = readTextFile }: LoadConfigOptions = {},
): string | undefined {
  // As parseEnv: an empty variable is unset (.env.example lists both, empty).
  const inline = env.WEBHOOK_SECRET || undefined;
  const file = env.WEBHOOK_SECRET_FILE?.trim() || undefined;
  if (inline === undefined && file === undefined) return undefined;
  return readSecrets(inline, file, readFile)[0];
}

/** A configuration problem; its message is meant for the person who started the process. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export interface LoadConfigOptions {
  readFile?: (path: string) => string;
}

type Env = NodeJS.ProcessEnv;

/**
 * Validates what the receiver reads from the environment and returns it frozen.
 *
 * @throws {ConfigError} naming every variable that is wrong or missing.
 * @example
 * const config = loadReceiverConfig({ WEBHOOK_SECRET: 'dev-secret' });
 */
export function loadReceiverConfig(
  env: Env = process.env,
  { readFile = readTextFile }: LoadConfigOptions = {},
): ReceiverConfig {
  const vars = parseEnv(ReceiverEnv, env);
  const secrets = readSecrets(vars.WEBHOOK_SECRET, vars.WEBHOOK_SECRET_FILE, readFile);
  if (vars.SIGNATURE_SCHEME === 'standard-webhooks') {
    secrets.forEach((secret, index) => {
      if (decodeStandardWebhookSecret(secret) === undefined) {
        throw invalid(
          `WEBHOOK_SECRET: secret #${index + 1} is not of the form whsec_<base64>, which SIGNATURE_SCHEME=standard-webhooks needs`,
        );
      }
    });
  }
  if (vars.INVALID_PAYLOAD === 'quarantine' && vars.QUARANTINE_MAX_BYTES < vars.BODY_LIMIT) {
    throw invalid(
      `QUARANTINE_MAX_BYTES: ${vars.QUARANTINE_MAX_BYTES} bytes is less than BODY_LIMIT (${vars.BODY_LIMIT}); the largest body would not fit`,
    );
  }
  return deepFreeze({
    ...shared(vars, env, DEFAULT_SERVICE_NAMES.receiver),
    port: vars.PORT,
    host: vars.HOST,
    adminToken: vars.ADMIN_TOKEN,
    metricsPort: vars.METRICS_PORT,
    traceUrlTemplate: vars.TRACE_URL_TEMPLATE,
    webhook: {
      scheme: vars.SIGNATURE_SCHEME,
      secrets,
      signatureHeader: vars.SIGNATURE_HEADER,
      toleranceSeconds: vars.SIGNATURE_TOLERANCE_SECONDS,
      bodyLimitBytes: vars.BODY_LIMIT,
      invalidPayload: vars.INVALID_PAYLOAD,
    },
    quarantine: {
      maxEntries: vars.QUARANTINE_MAX_ENTRIES,
      maxAgeDays: vars.QUARANTINE_MAX_AGE_DAYS,
      maxBytes: vars.QUARANTINE_MAX_BYTES,
    },
  });
}

/**
 * Validates what the worker reads from the environment and returns it frozen. The API's URL and
 * token are required when auto-triage will call the API; custom handlers that call it without
 * them get a clear error from the client.
 *
 * @throws {ConfigError} naming every variable that is wrong or missing.
 */
export function loadWorkerConfig(
  env: Env = process.env,
  { readFile = readTextFile }: LoadConfigOptions = {},
): WorkerConfig {
  const vars = parseEnv(WorkerEnv, env);
  const token = readToken(vars.FEEDBACK_API_TOKEN, vars.FEEDBACK_API_TOKEN_FILE, readFile);
  const triage =
    vars.TRIAGE_RULES === undefined
      ? undefined
      : {
          rulesPath: vars.TRIAGE_RULES,
          dryRun: vars.TRIAGE_DRY_RUN,
          consoleUrl: vars.CONSOLE_URL,
          readVariable: (name: string) => (env[name] === '' ? undefined : env[name]),
        };
  if (triage && !triage.dryRun) {
    const missing = [
      vars.FEEDBACK_API_URL === undefined ? 'FEEDBACK_API_URL' : undefined,
      token === undefined ? 'FEEDBACK_API_TOKEN (or FEEDBACK_API_TOKEN_FILE)' : undefined,
    ].filter((name) => name !== undefined);
    if (missing.length > 0) {
      throw invalid(
        `${missing.join(' and ')}: required when TRIAGE_RULES is set (or set TRIAGE_DRY_RUN=true)`,
      );
    }
  }
  return deepFreeze({
    ...shared(vars, env, DEFAULT_SERVICE_NAMES.worker),
    api: {
      baseUrl: vars.FEEDBACK_API_URL,
      token,
      rateLimitPerMinute: vars.FEEDBACK_API_RATE_LIMIT,
      timeoutMs: vars.FEEDBACK_API_TIMEOUT_SECONDS * 1000,
    },
    handlerModules: (vars.HANDLERS ?? '')
      .split(',')
      .map((path) => path.trim())
      .filter((path) => path.length > 0),
    concurrency: vars.WORKER_CONCURRENCY,
    lockSeconds: vars.WORKER_LOCK_SECONDS,
    shutdownTimeoutSeconds: vars.SHUTDOWN_TIMEOUT_SECONDS,
    metricsPort: vars.METRICS_PORT,
    triage,
    historyMaxDeliveries: vars.HISTORY_MAX_DELIVERIES,
  });
}

function parseEnv<Shape extends z.ZodRawShape>(schema: z.ZodObject<Shape>, env: Env) {
  // An empty variable (`PORT=`) means "not set", as most shells and compose files intend.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw invalid(...lines);
  }
  return parsed.data;
}

type SharedVars = z.infer<z.ZodObject<typeof SharedEnv>>;

function shared(vars: SharedVars, env: Env, defaultServiceName: string): SharedConfig {
  return {
    redisUrl: vars.REDIS_URL,
    redisUrlFromEnv: (env.REDIS_URL ?? '') !== '',
    queuePrefix: keyPrefix(vars.QUEUE_PREFIX, vars.REDIS_URL),
    logLevel: vars.LOG_LEVEL,
    logPretty: vars.LOG_PRETTY,
    dedupeTtlSeconds: vars.DEDUPE_TTL_SECONDS,
    similar:
      vars.SIMILAR === 'off'
        ? undefined
        : { threshold: vars.SIMILAR_THRESHOLD, keep: vars.SIMILAR_KEEP },
    completedJobRetentionSeconds: vars.COMPLETED_JOB_RETENTION_SECONDS,
    ackReplicas: { replicas: vars.ACK_REPLICAS, timeoutMs: vars.ACK_REPLICAS_TIMEOUT_MS },
    tracing: tracing(vars, defaultServiceName),
  };
}

/**
 * Tracing is on when an OTLP endpoint is set and OTEL_SDK_DISABLED is not true; then the other
 * OTEL_* variables are checked. The SDK needs a newer Node than the rest of the service: asked
 * for on an older one, it stops the start.
 */
export function tracing(
  env: { readonly [name in keyof typeof TracingOnEnv.shape]?: string | undefined },
  defaultServiceName: string,
  nodeVersion = process.versions.node,
): TracingConfig | undefined {
  if (!env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT && !env.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  const vars = parseEnv(TracingOnEnv, env);
  if (vars.OTEL_SDK_DISABLED) return undefined;
  const endpoint =
    vars.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${vars.OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`;
  if (!atLeast(nodeVersion, TRACING_MIN_NODE)) {
    const variable = vars.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
      ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
      : 'OTEL_EXPORTER_OTLP_ENDPOINT';
    throw invalid(
      `${variable}: tracing needs Node ${TRACING_MIN_NODE} or later (this is Node ${nodeVersion}); unset it, or run on Node 24 LTS`,
    );
  }
  const resourceName = vars.OTEL_RESOURCE_ATTRIBUTES?.split(',')
    .map((pair) => pair.split('='))
    .find(([key]) => key?.trim() === 'service.name')?.[1]
    ?.trim();
  return {
    endpoint,
    protocol:
      vars.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
      vars.OTEL_EXPORTER_OTLP_PROTOCOL ??
      'http/protobuf',
    serviceName: vars.OTEL_SERVICE_NAME ?? (resourceName || defaultServiceName),
    sampler: { name: vars.OTEL_TRACES_SAMPLER, ratio: vars.OTEL_TRACES_SAMPLER_ARG },
  };
}

function atLeast(version: string, minimum: string): boolean {
  const [a = 0, b = 0, c = 0] = version.split('.').map(Number);
  const [p = 0, q = 0, r = 0] = minimum.split('.').map(Number);
  return a !== p ? a > p : b !== q ? b > q : c >= r;
}

/** The prefix of every key, from QUEUE_PREFIX: in braces on a cluster-mode Redis (a hash tag). */
export function keyPrefix(queuePrefix: string, redisUrl: string): string {
  return parseRedisUrl(redisUrl).kind === 'cluster' ? `{${queuePrefix}}` : queuePrefix;
}

function invalid(...lines: string[]): ConfigError {
  return new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
}

function readTextFile(path: string): string {
  return readFileSync(path, 'utf8');
}

function readFileNamed(variable: string, path: string, readFile: (path: string) => string) {
  try {
    return readFile(path);
  } catch (error) {
    const reason = error instanceof Error && 'code' in error ? String(error.code) : 'unreadable';
    throw invalid(`${variable}: cannot read ${path} (${reason})`);
  }
}

function readToken(
  inline: string | undefined,
  file: string | undefined,
  readFile: (path: string) => string,
): string | undefined {
  if (inline !== undefined && file !== undefined) {
    throw invalid('FEEDBACK_API_TOKEN and FEEDBACK_API_TOKEN_FILE are both set; set one of them');
  }
  const token = (
    file === undefined ? inline : readFileNamed('FEEDBACK_API_TOKEN_FILE', file, readFile)
  )?.trim();
  return token === '' ? undefined : token;
}

function readSecrets(
  inline: string | undefined,
  file: string | undefined,
  readFile: (path: string) => string,
): string[] {
  if (inline !== undefined && file !== undefined) {
    throw invalid('WEBHOOK_SECRET and WEBHOOK_SECRET_FILE are both set; set one of them');
  }
  const secrets = (
    file === undefined
      ? (inline ?? '').split(',')
      : readFileNamed('WEBHOOK_SECRET_FILE', file, readFile).split(/\r?\n/)
  )
    .map((secret) => secret.trim())
    .filter((secret) => secret.length > 0);
  if (secrets.length > 0) return secrets;
  // Fail closed: a receiver without a secret would have to accept anything.
  throw invalid(
    inline === undefined && file === undefined
      ? 'WEBHOOK_SECRET: required (or WEBHOOK_SECRET_FILE, a file with one secret per line); the receiver does not start without a secret'
      : `${file === undefined ? 'WEBHOOK_SECRET' : 'WEBHOOK_SECRET_FILE'}: holds no secret`,
  );
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

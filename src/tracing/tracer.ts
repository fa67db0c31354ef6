/**
 * The service's spans, through one small interface of its own. OpenTelemetry's SDK is loaded
 * only when an OTLP endpoint is configured (startTracing, then otel.ts); until then every
 * function here costs one check and loads nothing, so a receiver without tracing runs as before.
 * Only otel.ts imports OpenTelemetry (the lint enforces it).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Telemetry } from 'bullmq';
import type { TracingConfig } from '../config.js';
import type { Logger } from '../logger.js';

export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

/** A span under way. */
export interface TraceSpan {
  setAttributes(attributes: SpanAttributes): void;
  addEvent(name: string, attributes?: SpanAttributes): void;
  /** Records the error on the span and marks it failed. */
  fail(error: unknown): void;
}

export interface SpanOptions {
  readonly kind?: SpanKind;
  readonly attributes?: SpanAttributes;
  /**
   * Headers to continue a trace from (W3C `traceparent`): a server span's request headers, and
   * only once the request is authenticated, so that no stranger chooses the trace's ids.
   */
  readonly continueFrom?: Readonly<Record<string, string | string[] | undefined>>;
  /**
   * When the span began, in milliseconds since the epoch, if before it is started: a server
   * span started once its request's signature was checked still covers the whole request.
   */
  readonly startTime?: number;
}

/** What otel.ts implements. */
export interface Tracer {
  /**
   * Runs `fn` in a new span, a child of the active one (or of `continueFrom`'s), and ends it
   * when `fn` settles; a throw fails the span.
   */
  inSpan<T>(name: string, options: SpanOptions, fn: (span: TraceSpan) => Promise<T>): Promise<T>;
  /** The active span: what the current request or run is in. */
  active(): TraceSpan | undefined;
  /** The active span's ids, for a log line. */
  ids(): { readonly trace_id: string; readonly span_id: string } | undefined;
  /** Runs `fn` outside any trace: work of the process, not of the request that set it off. */
  detached<T>(fn: () => T): T;
  /** BullMQ's telemetry option: spans for adding and processing jobs, and the trace through them. */
  readonly bullmq: Telemetry;
  /** Sends the spans still buffered, and stops. */
  shutdown(): Promise<void>;
}

const NO_SPAN: TraceSpan = {
  setAttributes: () => undefined,
  addEvent: () => undefined,
  fail: () => undefined,
};

let tracer: Tracer | undefined;

/** How long the last spans may take to leave at shutdown: a collector away does not hold it. */
const SHUTDOWN_WAIT_MS = 2_000;

/**
 * Loads OpenTelemetry's SDK and starts sending spans, when `config` says so; call it before the
 * receiver or worker is built (queues, workers and routes take their telemetry when made).
 *
 * @returns a function that flushes the spans and stops the SDK (at shutdown)
 */
export async function startTracing(
  config: TracingConfig | undefined,
  logger: Logger,
): Promise<() => Promise<void>> {
  if (config === undefined || tracer !== undefined) return async () => undefined;
  const { createOtelTracer } = await import('./otel.js');
  const started = createOtelTracer(config);
  tracer = started;
  logger.info(
    {
      endpoint: withoutCredentials(config.endpoint),
      protocol: config.protocol,
      serviceName: config.serviceName,
    },
    'tracing on: sending spans over OTLP',
  );
  return async () => {
    if (tracer === started) tracer = undefined;
    const sent = await Promise.race([
      started.shutdown().then(
        () => true,
        (error: Error) => error.message,
      ),
      sleep(SHUTDOWN_WAIT_MS, false, { ref: false }),
    ]);
    if (sent !== true) {
      logger.warn(
        { error: sent === false ? `no answer within ${SHUTDOWN_WAIT_MS} ms` : sent },
        'could not send the last spans',
      );
    }
  };
}

/** Whether spans are being made: code that would build something only for them asks first. */
export function tracingOn(): boolean {
  return tracer !== undefined;
}

/** Runs `fn` in a new span when tracing is on; otherwise just runs it. */
export function inSpan<T>(
  name: string,
  options: SpanOptions,
  fn: (span: TraceSpan) => Promise<T>,
): Promise<T> {
  return tracer ? tracer.inSpan(name, options, fn) : fn(NO_SPAN);
}

/** The span the caller runs in; a span that records nothing when tracing is off. */
export function activeSpan(): TraceSpan {
  return tracer?.active() ?? NO_SPAN;
}

/** A queue's or worker's options, with BullMQ's `telemetry` when tracing is on. */
export function withTelemetry<T extends object>(options: T): T & { telemetry?: Telemetry } {
  return tracer ? { ...options, telemetry: tracer.bullmq } : options;
}

/** Runs `fn` outside any trace: its log lines carry no trace id of the request that started it. */
export function detached<T>(fn: () => T): T {
  return tracer ? tracer.detached(fn) : fn();
}

/** `trace_id` and `span_id` for a log line written inside a span (pino's mixin). */
export function traceIdsForLog(): object {
  return tracer?.ids() ?? {};
}

/** An endpoint as it may be logged: a password in its URL stays out. */
function withoutCredentials(endpoint: string): string {
  const url = new URL(endpoint);
  url.username = '';
  url.password = '';
  return url.href;
}

/**
 * The tracer on OpenTelemetry: the Node SDK, configured by the standard OTEL_* variables (the
 * exporter's endpoint, protocol and headers, the batch processor, resource attributes), sending
 * traces only; no auto-instrumentation, so the spans are the ones this service makes, with the
 * attributes it chooses and nothing secret. BullMQ's telemetry goes through bullmq-otel, which
 * carries the trace from a job's producer to each attempt at it.
 *
 * Two choices differ from the SDK's defaults, because a sender is anyone on the internet:
 * - W3C trace context is continued, baggage is not: what the receiver extracts from a request
 *   travels on in every job of the delivery.
 * - A sender's sampled flag decides nothing: a remote parent is sampled by the root sampler
 *   (OTEL_TRACES_SAMPLER's ratio), so requests cannot force every span to be recorded and
 *   crowd out the others. Spans within a process follow their parent.
 *
 * Loaded only by startTracing (tracer.ts), when an endpoint is set.
 */
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { NodeSDK } from '@opentelemetry/sdk-node';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace';
import type { Span as BullmqSpan, Telemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import type { TracingConfig } from '../config.js';
import type { SpanAttributes, Tracer, TraceSpan } from './tracer.js';

const KINDS = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
} as const;

const TRACER_NAME = 'feedback-receiver';

/**
 * BullMQ's spans of an idle worker, each a trace of its own: a blocking poll that found no job,
 * the stalled-job check. Noise in a backend; a poll that found a job is in that job's trace.
 */
const IDLE_SPAN = /^(getNextJob|moveStalledJobsToWait|startStalledCheckTimer) /;

/** What BullMQ would put on a span or event that carries a job's data out: a job's result. */
const JOB_DATA_ATTRIBUTES = new Set(['bullmq.job.result']);

export function createOtelTracer(config: TracingConfig): Tracer {
  const sdk = new NodeSDK({
    serviceName: config.serviceName,
    instrumentations: [],
    textMapPropagator: new W3CTraceContextPropagator(),
    sampler: withoutIdleSpans(samplerFor(config.sampler)),
    // Traces only: metrics are /metrics, logs are stdout.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  const tracer = trace.getTracer(TRACER_NAME);

  return {
    inSpan(name, options, fn) {
      const parent = options.continueFrom
        ? propagation.extract(context.active(), options.continueFrom)
        : context.active();
      const spanOptions = {
        kind: KINDS[options.kind ?? 'internal'],
        ...(options.attributes ? { attributes: defined(options.attributes) } : {}),
        ...(options.startTime === undefined ? {} : { startTime: options.startTime }),
      };
      return tracer.startActiveSpan(name, spanOptions, parent, async (span) => {
        try {
          return await fn(wrap(span));
        } catch (error) {
          fail(span, error);
          throw error;
        } finally {
          span.end();
        }
      });
    },
    active() {
      const span = trace.getActiveSpan();
      return span ? wrap(span) : undefined;
    },
    ids() {
      const ids = trace.getActiveSpan()?.spanContext();
      return ids && trace.isSpanContextValid(ids)
        ? { trace_id: ids.traceId, span_id: ids.spanId }
        : undefined;
    },
    detached: (fn) => context.with(ROOT_CONTEXT, fn),
    bullmq: withoutJobData(new BullMQOtel({ tracerName: TRACER_NAME })),
    shutdown: () => sdk.shutdown(),
  };
}

/** OTEL_TRACES_SAMPLER, with a remote parent's sampled flag left to the root sampler. */
function samplerFor({ name, ratio }: TracingConfig['sampler']): Sampler {
  const root = name.endsWith('always_off')
    ? new AlwaysOffSampler()
    : name.endsWith('traceidratio')
      ? new TraceIdRatioBasedSampler(ratio)
      : new AlwaysOnSampler();
  if (!name.startsWith('parentbased_')) return root;
  return new ParentBasedSampler({ root, remoteParentSampled: root, remoteParentNotSampled: root });
}

function withoutIdleSpans(sampler: Sampler): Sampler {
  return {
    shouldSample(parent: Context, traceId, spanName, ...rest) {
      if (IDLE_SPAN.test(spanName) && trace.getSpanContext(parent) === undefined) {
        return { decision: SamplingDecision.NOT_RECORD };
      }
      return sampler.shouldSample(parent, traceId, spanName, ...rest);
    },
    toString: () => `WithoutIdleSpans{${sampler.toString()}}`,
  };
}

/** bullmq-otel, except for the attributes that would carry a job's data out. */
function withoutJobData(telemetry: Telemetry<Context>): Telemetry<Context> {
  const keep = (key: string) => !JOB_DATA_ATTRIBUTES.has(key);
  const kept = <T extends object>(attributes: T): T =>
    Object.fromEntries(Object.entries(attributes).filter(([key]) => keep(key))) as T;
  return {
    contextManager: telemetry.contextManager,
    tracer: {
      startSpan(name, options, parent) {
        const span: BullmqSpan<Context> = telemetry.tracer.startSpan(name, options, parent);
        return {
          setSpanOnContext: (ctx) => span.setSpanOnContext(ctx),
          setAttribute: (key, value) => {
            if (keep(key)) span.setAttribute(key, value);
          },
          setAttributes: (attributes) => span.setAttributes(kept(attributes)),
          // BullMQ puts a job's result on its `job completed` event.
          addEvent: (eventName, attributes) =>
            span.addEvent(eventName, attributes && kept(attributes)),
          recordException: (exception, time) => span.recordException(exception, time),
          end: () => span.end(),
        };
      },
    },
  };
}

function wrap(span: Span): TraceSpan {
  return {
    setAttributes: (attributes) => void span.setAttributes(defined(attributes)),
    addEvent: (name, attributes) =>
      void span.addEvent(name, attributes ? defined(attributes) : undefined),
    fail: (error) => fail(span, error),
  };
}

function fail(span: Span, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  span.recordException(error instanceof Error ? error : message);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** The attributes that have a value (OpenTelemetry drops undefined ones with a warning). */
function defined(attributes: SpanAttributes): Attributes {
  const kept: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (value !== undefined) kept[key] = value;
  }
  return kept;
}

/**
 * The tracer on OpenTelemetry: the Node SDK, configured by the standard OTEL_* variables (the
 * exporter's endpoint, protocol and headers, the sampler, the batch processor, resource
 * attributes), sending traces only; no auto-instrumentation, so the spans are the ones this
 * service makes, with the attributes it chooses and nothing secret. BullMQ's telemetry goes
 * through bullmq-otel, which carries the trace from a job's producer to each attempt at it.
 *
 * Loaded only by startTracing (tracer.ts), when an endpoint is set.
 */
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { NodeSDK } from '@opentelemetry/sdk-node';
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

export function createOtelTracer(config: TracingConfig): Tracer {
  const sdk = new NodeSDK({
    serviceName: config.serviceName,
    instrumentations: [],
    // W3C trace context only, not baggage: a sender is anyone on the internet, and what the
    // receiver extracts from its request travels on in every job of the delivery.
    textMapPropagator: new W3CTraceContextPropagator(),
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
    bullmq: new BullMQOtel({ tracerName: TRACER_NAME }),
    shutdown: () => sdk.shutdown(),
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

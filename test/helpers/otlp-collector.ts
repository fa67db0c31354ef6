/**
 * A stand-in for an OpenTelemetry collector: an HTTP server on 127.0.0.1 that takes OTLP/HTTP
 * trace exports at /v1/traces, in JSON or in protobuf, decodes them itself (the protobuf wire
 * format, for the few messages a trace export uses), and keeps every span it received.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { expect, vi } from 'vitest';

export type AttributeValue = string | number | boolean | undefined;

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's numbers: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly events: readonly {
    readonly name: string;
    readonly attributes: Readonly<Record<string, AttributeValue>>;
  }[];
  /** 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message: string };
  /** The resource's `service.name`. */
  readonly service: string;
}

export interface OtlpCollector {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** The content types of the exports received, one per request. */
  readonly contentTypes: string[];
  /** Every raw request body, for a search of what must never be sent. */
  readonly bodies: Buffer[];
  /** Waits until spans matching `wanted` have arrived, and returns them. */
  waitFor(
    wanted: (spans: readonly ReceivedSpan[]) => boolean,
    timeoutMs?: number,
  ): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const bodies: Buffer[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      contentTypes.push(type);
      bodies.push(body);
      if (type === 'application/json') {
        spans.push(...fromJson(JSON.parse(body.toString('utf8')) as JsonExport));
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      } else if (type === 'application/x-protobuf') {
        spans.push(...fromProtobuf(body));
        res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
      } else {
        res.writeHead(415).end();
      }
    })();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    bodies,
    async waitFor(wanted, timeoutMs = 20_000) {
      await vi.waitFor(() => expect(wanted(spans), `spans so far: ${describe(spans)}`).toBe(true), {
        timeout: timeoutMs,
        interval: 100,
      });
      return spans;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Names and parents, for a failure message. */
export function describe(spans: readonly ReceivedSpan[]): string {
  return spans.map((span) => `${span.name} (${span.spanId} <- ${span.parentSpanId})`).join(', ');
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
}

// --- OTLP/JSON ---------------------------------------------------------------------------------

interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
}
interface JsonKeyValue {
  key: string;
  value?: JsonAnyValue;
}
interface JsonExport {
  resourceSpans?: {
    resource?: { attributes?: JsonKeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: JsonKeyValue[];
        events?: { name: string; attributes?: JsonKeyValue[] }[];
        status?: { code?: number; message?: string };
      }[];
    }[];
  }[];
}

function fromJson(exported: JsonExport): ReceivedSpan[] {
  const attributes = (list: JsonKeyValue[] = []) =>
    Object.fromEntries(list.map(({ key, value = {} }) => [key, jsonValue(value)]));
  return (exported.resourceSpans ?? []).flatMap((resourceSpans) => {
    const service = String(attributes(resourceSpans.resource?.attributes)['service.name']);
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        kind: span.kind ?? 0,
        attributes: attributes(span.attributes),
        events: (span.events ?? []).map((event) => ({
          name: event.name,
          attributes: attributes(event.attributes),
        })),
        status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
        service,
      })),
    );
  });
}

function jsonValue(value: JsonAnyValue): AttributeValue {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.doubleValue;
}

// --- OTLP/protobuf -----------------------------------------------------------------------------

/** A message's fields by number: length-delimited ones as bytes, varints as bigints. */
type Fields = Map<number, (Buffer | bigint)[]>;

function decode(buffer: Buffer): Fields {
  const fields: Fields = new Map();
  let offset = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buffer[offset++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (offset < buffer.length) {
    const tag = Number(varint());
    const field = tag >>> 3;
    let value: Buffer | bigint;
    switch (tag & 7) {
      case 0:
        value = varint();
        break;
      case 1:
        value = buffer.subarray(offset, (offset += 8));
        break;
      case 2: {
        const length = Number(varint());
        value = buffer.subarray(offset, (offset += length));
        break;
      }
      case 5:
        value = buffer.subarray(offset, (offset += 4));
        break;
      default:
        throw new Error(`unsupported wire type ${tag & 7}`);
    }
    fields.set(field, [...(fields.get(field) ?? []), value]);
  }
  return fields;
}

const bytesOf = (fields: Fields, field: number) => fields.get(field)?.[0] as Buffer | undefined;
const messages = (fields: Fields, field: number) =>
  ((fields.get(field) ?? []) as Buffer[]).map(decode);
const text = (fields: Fields, field: number) => bytesOf(fields, field)?.toString('utf8') ?? '';
const number = (fields: Fields, field: number) =>
  Number((fields.get(field)?.[0] as bigint | undefined) ?? 0n);

function protobufAttributes(list: Fields[]): Record<string, AttributeValue> {
  return Object.fromEntries(
    list.map((pair) => {
      const value = messages(pair, 2)[0] ?? new Map();
      let decoded: AttributeValue;
      if (value.has(1)) decoded = text(value, 1);
      else if (value.has(2)) decoded = number(value, 2) === 1;
      else if (value.has(3)) decoded = Number(BigInt.asIntN(64, value.get(3)![0] as bigint));
      else if (value.has(4)) decoded = bytesOf(value, 4)!.readDoubleLE(0);
      return [text(pair, 1), decoded];
    }),
  );
}

function fromProtobuf(body: Buffer): ReceivedSpan[] {
  return messages(decode(body), 1).flatMap((resourceSpans) => {
    const resource = messages(resourceSpans, 1)[0] ?? new Map();
    const service = String(protobufAttributes(messages(resource, 1))['service.name']);
    return messages(resourceSpans, 2).flatMap((scopeSpans) =>
      messages(scopeSpans, 2).map((span) => {
        const status = messages(span, 15)[0] ?? new Map();
        return {
          traceId: bytesOf(span, 1)?.toString('hex') ?? '',
          spanId: bytesOf(span, 2)?.toString('hex') ?? '',
          parentSpanId: bytesOf(span, 4)?.toString('hex') ?? '',
          name: text(span, 5),
          kind: number(span, 6),
          attributes: protobufAttributes(messages(span, 9)),
          events: messages(span, 11).map((event) => ({
            name: text(event, 2),
            attributes: protobufAttributes(messages(event, 3)),
          })),
          status: { code: number(status, 3), message: text(status, 2) },
          service,
        };
      }),
    );
  });
}

/**
 * What a verified request body means: a feedback.created delivery to queue, another event to
 * ignore, or a body that cannot be read as either. Pure: no I/O, no framework.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { FeedbackRecordSchema, type FeedbackRecord } from './feedback-record.js';

export const FEEDBACK_CREATED = 'feedback.created';

/** One accepted delivery, as it travels from the receiver through the queue to the handlers. */
export interface Delivery {
  /** Identifies the delivery across retries: the sender's message id, or event and record id. */
  readonly key: string;
  /** The receiver queues `feedback.created` only; a later release may queue other events. */
  readonly event: string;
  /** When the receiver accepted it, ISO 8601 UTC. */
  readonly receivedAt: string;
  readonly record: FeedbackRecord;
  /** How the receiver accepted it; absent for a delivery replayed from the quarantine. */
  readonly receipt?: DeliveryReceipt | undefined;
}

export interface DeliveryReceipt {
  /** The signature scheme that verified it. */
  readonly scheme: string;
  /** The position of the secret that matched (0: the first in WEBHOOK_SECRET). */
  readonly secretIndex: number;
}

/**
 * A delivery as the queue holds it. Its record was validated against the whole schema where it
 * came in (the signed route, or a quarantine replay); a job from an older version, or one added by
 * hand, must still be shaped as a delivery before any handler sees it: a key, the event, when it
 * was received, and a record that is an object with a valid id. Any event: one a later release's
 * receiver queues is routed and run by this release's workers too, during a rolling deploy
 * (docs/runs.md), where refusing it would put the delivery in the dead letter. The record is checked no deeper
 * and passed on as it is: checking every field again would repeat, on the worker's hot path and
 * for every job, what was done once already where the record came in.
 */
const RECORD_ID = FeedbackRecordSchema.shape.id;
const DeliverySchema = z.object({
  key: z.string().min(1),
  event: z.string().min(1),
  receivedAt: z.iso.datetime(),
  record: z.custom<FeedbackRecord>(
    (value) =>
      value !== null &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      RECORD_ID.safeParse((value as { id?: unknown }).id).success,
    { message: 'expected a feedback record: an object with an id' },
  ),
  receipt: z.object({ scheme: z.string(), secretIndex: z.number().int().min(0) }).optional(),
});

export type DeliveryCheck =
  | { readonly ok: true; readonly delivery: Delivery }
  | { readonly ok: false; readonly issues: readonly InvalidPayloadIssue[] };

/** Reads a queued job's data as a delivery, or says why it is not one. */
export function readDelivery(data: unknown): DeliveryCheck {
  const parsed = DeliverySchema.safeParse(data);
  return parsed.success
    ? { ok: true, delivery: parsed.data }
    : { ok: false, issues: describeIssues(parsed.error) };
}

/** Issues as one line, for a failed job's reason or an answer's detail. */
export function describeIssuesInline(issues: readonly InvalidPayloadIssue[]): string {
  return issues
    .map(({ path, message }) => (path === '' ? message : `${path}: ${message}`))
    .join('; ');
}

export type Interpretation =
  | { readonly kind: 'delivery'; readonly delivery: Delivery }
  | { readonly kind: 'ignored'; readonly event: string }
  | {
      readonly kind: 'invalid';
      readonly reason: 'unparseable' | 'schema';
      readonly issues: readonly InvalidPayloadIssue[];
    };

export interface InvalidPayloadIssue {
  readonly path: string;
  readonly message: string;
}

export interface InterpretOptions {
  /** The sender's id for this delivery (Standard Webhooks' `webhook-id`), if it has one. */
  readonly deliveryId?: string | undefined;
  readonly receivedAt: Date;
  /** How the receiver accepted the body, kept with the delivery. */
  readonly receipt?: DeliveryReceipt | undefined;
}

// JSON must be UTF-8 (RFC 8259); invalid bytes make the body unparseable rather than being
// silently replaced with U+FFFD.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a body as a feedback delivery. Accepts a bare feedback record (a feedback.created) or an
 * envelope `{"event": "...", "data": <record>, ...}`.
 */
export function interpretPayload(body: Uint8Array, options: InterpretOptions): Interpretation {
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(body));
  } catch (error) {
    const message = error instanceof Error ? error.message : 'not JSON';
    return { kind: 'invalid', reason: 'unparseable', issues: [{ path: '', message }] };
  }

  if (nestedDeeperThan(json, MAX_NESTING)) {
    const message = `nested deeper than ${MAX_NESTING} levels`;
    return { kind: 'invalid', reason: 'schema', issues: [{ path: '', message }] };
  }

  const { event, data } = unwrap(json);
  if (event !== FEEDBACK_CREATED) return { kind: 'ignored', event };

  const parsed = FeedbackRecordSchema.safeParse(data);
  if (!parsed.success) {
    return { kind: 'invalid', reason: 'schema', issues: describeIssues(parsed.error) };
  }
  const record = parsed.data;
  return {
    kind: 'delivery',
    delivery: {
      key: options.deliveryId ?? keyOfRecord(record.id),
      event,
      receivedAt: options.receivedAt.toISOString(),
      record,
      ...(options.receipt ? { receipt: options.receipt } : {}),
    },
  };
}

/**
 * How deep a delivery may nest. A feedback record nests three levels (client_context.geo), and
 * unknown fields are kept; without a bound, a signed body of 100 000 nested arrays parses fine but
 * overflows the stack when the queue serialises it again, which would answer 503 for ever.
 */
const MAX_NESTING = 32;

/**
 * Whether an object or array sits more than `limit` levels deep. The recursion is bounded by
 * `limit` itself, so it cannot overflow the stack; it loops over keys rather than
 * `Object.values`, so checking a record allocates nothing.
 */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (limit === 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (nestedDeeperThan(item, limit - 1)) return true;
    return false;
  }
  for (const key in value) {
    if (nestedDeeperThan((value as Record<string, unknown>)[key], limit - 1)) return true;
  }
  return false;
}

function unwrap(json: unknown): { event: string; data: unknown } {
  if (
    json !== null &&
    typeof json === 'object' &&
    !Array.isArray(json) &&
    'event' in json &&
    typeof json.event === 'string' &&
    'data' in json
  ) {
    return { event: json.event, data: json.data };
  }
  // The service's docs show a bare record; one is created once, so it is a feedback.created.
  return { event: FEEDBACK_CREATED, data: json };
}

/**
 * Issues kept per invalid delivery. A signed body of 100 000 wrong array items has as many
 * issues; all of them would go into one log line and the quarantine entry.
 */
const MAX_ISSUES = 20;

function describeIssues(error: z.ZodError): InvalidPayloadIssue[] {
  const issues = error.issues
    .slice(0, MAX_ISSUES)
    .map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
  const more = error.issues.length - MAX_ISSUES;
  return more > 0 ? [...issues, { path: '', message: `and ${more} more issues` }] : issues;
}

const READABLE_ID_LENGTH = 200;

/**
 * The id a delivery key is known by in the queues: the deliveries queue's deduplication id, and
 * the stem of its handler runs' job ids. BullMQ rejects job ids that contain `:` or are all
 * digits, so the key is percent-encoded (which encodes `:`) behind a letter prefix; a very long
 * key is hashed instead. The two forms have different prefixes and so can never collide.
 */
/** A delivery's key when the sender gives no delivery id: the event and the record's id. */
export function keyOfRecord(recordId: string): string {
  return `${FEEDBACK_CREATED}:${recordId}`;
}

export function deduplicationIdFor(key: string): string {
  const readable = encodeURIComponent(key);
  return readable.length <= READABLE_ID_LENGTH
    ? `d-${readable}`
    : `h-${createHash('sha256').update(key).digest('hex')}`;
}

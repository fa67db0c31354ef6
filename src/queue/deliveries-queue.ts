/**
 * The `deliveries` queue and the one write the receiver makes per accepted delivery. Each request
 * gets a fresh job id and the delivery's key as BullMQ's deduplication id, so a single `add`
 * decides both whether a job is written and which answer the sender gets: the id BullMQ returns
 * is ours for a new delivery and the earlier job's for a duplicate, whichever receiver got it.
 */
import { randomUUID } from 'node:crypto';
import { Queue, type Job, type JobsOptions } from 'bullmq';
import { withTelemetry } from '../tracing/tracer.js';
import { deduplicationIdFor, type Delivery } from '../webhooks/delivery.js';
import type { RedisConnection } from './redis.js';
import { createReplicatedWrites, type ReplicatedWrites } from './replicated-writes.js';

export const DELIVERIES_QUEUE = 'deliveries';

/**
 * Completed and failed jobs are kept for a while for inspection, bounded so Redis memory stays
 * bounded (by age also while none finishes: trim-finished-jobs.ts). Deduplication does not
 * depend on them: its marker outlives the job.
 */
export const DELIVERY_JOB_RETENTION: JobRetention = {
  removeOnComplete: { age: 24 * 60 * 60, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 60 * 60, count: 50_000 },
};

export type JobRetention = Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'>;

/**
 * What one state's retention keeps (BullMQ's `removeOnComplete` or `removeOnFail`): jobs no older
 * than `ageSeconds`, at most `count` of them; each undefined where it sets no such bound.
 */
export function keptBy(keep: JobRetention['removeOnFail']) {
  const bounds = typeof keep === 'object' ? keep : { count: typeof keep === 'number' ? keep : 0 };
  return {
    ageSeconds: 'age' in bounds ? bounds.age : undefined,
    count: bounds.count !== undefined && bounds.count > 0 ? bounds.count : undefined,
  };
}

/**
 * How often routing a delivery is tried. A Redis that refuses its writes for a while (out of
 * memory, a replica that was a primary a moment ago) spends none (runs.ts, `orGiveBack`): it
 * fails only when Redis refuses them otherwise (a user without the right to write them). After
 * 1 + 2 + 4 + 8 s of backoff it waits in the dead letter for an operator.
 */
export const ROUTING_ATTEMPTS = 5;
const ROUTING_BACKOFF = { type: 'exponential', delay: 1_000 } as const;

/** Most finished jobs of one queue kept at once, whatever their age, so memory stays bounded. */
const MOST_COMPLETED_KEPT = 10_000;

/** A retention that keeps completed jobs for `seconds` (COMPLETED_JOB_RETENTION_SECONDS). */
export function keepCompletedFor(retention: JobRetention, seconds: number): JobRetention {
  return { ...retention, removeOnComplete: { age: seconds, count: MOST_COMPLETED_KEPT } };
}

/** Deliveries' retention (COMPLETED_JOB_RETENTION_SECONDS): the receiver adds, the worker trims. */
export function deliveryRetention(completedJobRetentionSeconds: number): JobRetention {
  return keepCompletedFor(DELIVERY_JOB_RETENTION, completedJobRetentionSeconds);
}

export type EnqueueStatus = 'queued' | 'duplicate';

export interface EnqueueResult {
  readonly status: EnqueueStatus;
  /** The delivery's job: the new one, or for a duplicate the one queued first. */
  readonly jobId: string;
}

/** What the receiver needs of the queue: put a delivery in it, once. */
export interface DeliveryQueue {
  /**
   * @throws {QueueUnavailableError} when Redis refused the write, or did not answer in time: then
   *   it may still land once Redis resumes.
   * @throws {QueueNotReplicatedError} when too few replicas confirmed it in time; it may exist.
   */
  enqueue(delivery: Delivery): Promise<EnqueueResult>;
}

export interface DeliveryQueueOptions {
  /** A producer connection (see createProducerConnection); shared, not closed by close(). */
  readonly connection: RedisConnection;
  readonly prefix: string;
  /** How writes are made and confirmed. Default: on `connection`, waiting for no replica. */
  readonly writes?: ReplicatedWrites;
  /** How long a delivery key is remembered, whatever happens to its job. */
  readonly dedupeTtlSeconds: number;
  /** How long finished jobs are kept. Default: DELIVERY_JOB_RETENTION. */
  readonly retention?: JobRetention;
}

export interface DeliveryQueueProducer extends DeliveryQueue {
  readonly queue: Queue<Delivery>;
  /** The job of the delivery with this key, while its key is remembered and its job kept. */
  find(key: string): Promise<Job<Delivery> | undefined>;
  close(): Promise<void>;
}

export function createDeliveryQueue({
  connection,
  prefix,
  dedupeTtlSeconds,
  retention = DELIVERY_JOB_RETENTION,
  writes = createReplicatedWrites({ connection, key: prefix }),
}: DeliveryQueueOptions): DeliveryQueueProducer {
  const queue = new Queue<Delivery>(DELIVERIES_QUEUE, withTelemetry({ connection, prefix }));
  const ttl = dedupeTtlSeconds * 1000;

  async function enqueue(delivery: Delivery): Promise<EnqueueResult> {
    const jobId = randomUUID();
    // BullMQ keeps a deduplication marker with a TTL after the job finishes and after retention
    // removes it, and checks it inside the script that adds the job.
    const job = await writes.store(() =>
      // The spread last: on Node 20, fields added after a leading spread cost ~4 µs a request.
      queue.add(delivery.event, delivery, {
        attempts: ROUTING_ATTEMPTS,
        backoff: ROUTING_BACKOFF,
        jobId,
        deduplication: { id: deduplicationIdFor(delivery.key), ttl },
        ...retention,
      }),
    );
    const id = job.id ?? jobId;
    return { status: id === jobId ? 'queued' : 'duplicate', jobId: id };
  }

  return {
    queue,
    enqueue,
    find: (key) => findDelivery(queue, key),
    close: () => queue.close(),
  };
}

/** The job of the delivery with this key, through BullMQ's lookup of a deduplication id. */
export async function findDelivery(
  queue: Queue<Delivery>,
  key: string,
): Promise<Job<Delivery> | undefined> {
  const jobId = await queue.getDeduplicationJobId(deduplicationIdFor(key));
  return jobId === null ? undefined : await queue.getJob(jobId);
}

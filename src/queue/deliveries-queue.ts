/**
 * The `deliveries` queue and the one write the receiver makes per accepted delivery: the job and
 * its deduplication marker, written atomically by BullMQ's own add script, in one round trip.
 */
import { createIORedisClient, Job, Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { jobIdFor, type Delivery } from '../webhooks/delivery.js';

export const DELIVERIES_QUEUE = 'deliveries';

/**
 * Completed and failed jobs are kept for a while for inspection, bounded so Redis memory stays
 * bounded. Deduplication does not depend on them: its marker outlives the job.
 */
export const DELIVERY_JOB_RETENTION: JobRetention = {
  removeOnComplete: { age: 24 * 60 * 60, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 60 * 60, count: 50_000 },
};

export type JobRetention = Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'>;

/** Most finished jobs of one queue kept at once, whatever their age, so memory stays bounded. */
const MOST_COMPLETED_KEPT = 10_000;

/** A retention that keeps completed jobs for `seconds` (COMPLETED_JOB_RETENTION_SECONDS). */
export function keepCompletedFor(retention: JobRetention, seconds: number): JobRetention {
  return { ...retention, removeOnComplete: { age: seconds, count: MOST_COMPLETED_KEPT } };
}

export type EnqueueStatus = 'queued' | 'duplicate';

export interface EnqueueResult {
  readonly status: EnqueueStatus;
  readonly jobId: string;
}

/** What the receiver needs of the queue: put a delivery in it, once. */
export interface DeliveryQueue {
  enqueue(delivery: Delivery): Promise<EnqueueResult>;
}

export interface DeliveryQueueOptions {
  /** A producer connection (see createProducerConnection); shared, not closed by close(). */
  readonly connection: Redis;
  readonly prefix: string;
  /** How long a delivery key is remembered, whatever happens to its job. */
  readonly dedupeTtlSeconds: number;
  /** How long finished jobs are kept. Default: DELIVERY_JOB_RETENTION. */
  readonly retention?: JobRetention;
}

export interface DeliveryQueueProducer extends DeliveryQueue {
  readonly queue: Queue<Delivery>;
  close(): Promise<void>;
}

export function createDeliveryQueue({
  connection,
  prefix,
  dedupeTtlSeconds,
  retention = DELIVERY_JOB_RETENTION,
}: DeliveryQueueOptions): DeliveryQueueProducer {
  const queue = new Queue<Delivery>(DELIVERIES_QUEUE, { connection, prefix });
  // The same wrapper BullMQ itself puts around this connection (cached per connection), through
  // which a Job writes itself with BullMQ's script.
  const client = createIORedisClient(connection);
  const dedupeTtlMs = dedupeTtlSeconds * 1000;

  async function enqueue(delivery: Delivery): Promise<EnqueueResult> {
    const jobId = jobIdFor(delivery.key);
    // BullMQ's deduplication keeps its marker for the TTL even after retention removes the job,
    // and checks it inside the same script that adds the job, so simultaneous duplicates make
    // one job whatever else happens. The EXISTS before it only tells the sender which answer it
    // gets. (A MULTI would make that answer atomic across receivers too, but ioredis builds a
    // pipeline object per MULTI that copies every BullMQ script onto it, which halved throughput.
    // Across two receivers racing on one key within microseconds, both may answer "queued"; the
    // queue still holds one job.)
    const options: JobsOptions = {
      ...retention,
      jobId,
      deduplication: { id: jobId, ttl: dedupeTtlMs },
    };
    const job = new Job<Delivery>(queue, delivery.event, delivery, options, jobId);
    // Both commands are issued in this same tick (addJob sends before its first await) and go out
    // in one write (auto-pipelining), so on this connection nothing comes between them.
    const seenBefore = connection.exists(`${queue.keys.de}:${jobId}`, `${queue.keys['']}${jobId}`);
    const added = job.addJob(client);
    const [seen] = await Promise.all([seenBefore, added]);
    return { status: seen > 0 ? 'duplicate' : 'queued', jobId };
  }

  return {
    queue,
    enqueue,
    close: () => queue.close(),
  };
}

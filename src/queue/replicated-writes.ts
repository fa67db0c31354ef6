/**
 * The receiver's writes, and what "stored" means before it answers 2xx. Redis replicates
 * asynchronously: a primary that dies loses the writes its replicas had not received. With
 * ACK_REPLICAS=n, a write counts as stored only once Redis's `WAIT n` says n replicas have it.
 *
 * WAIT covers every earlier write of the connection it is sent on, and blocks that connection
 * while it waits. So the writes of concurrent requests share one WAIT: while one is out, the
 * writes that finish join the next. Each write's budget (ACK_REPLICAS_TIMEOUT_MS) starts when
 * it is sent, and a WAIT never waits longer than the earliest budget it covers, so an answer
 * never takes much longer than the budget, even when the replica has stopped.
 *
 * A replica that acknowledges an offset holds everything the primary wrote before it, whoever
 * wrote it: BullMQ's add of a duplicate records an event, so a duplicate's WAIT also covers the
 * first write of that delivery, even when another receiver made it.
 */
import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
import { QueueNotReplicatedError } from '../errors.js';
import { writeOrUnavailable, type RedisConnection } from './redis.js';

export interface ReplicatedWrites {
  /**
   * Runs a write; with replicas to wait for, resolves once they have it.
   *
   * @throws {QueueUnavailableError} when Redis refused the write, or did not answer in time: then
   *   it may still land once Redis resumes.
   * @throws {QueueNotReplicatedError} when too few replicas confirmed it in time; it may exist.
   */
  store<T>(write: () => Promise<T>): Promise<T>;
}

export interface ReplicaAcks {
  /** How many replicas must hold a write before it counts (ACK_REPLICAS); 0 waits for none. */
  readonly replicas: number;
  /** How long a write may wait for them, counted from when it is sent (ACK_REPLICAS_TIMEOUT_MS). */
  readonly timeoutMs: number;
}

export interface ReplicatedWritesOptions {
  readonly connection: RedisConnection;
  /** A key of this service's: on a cluster, WAIT goes to the node that holds its slot. */
  readonly key: string;
  readonly acks?: ReplicaAcks;
}

export function createReplicatedWrites({
  connection,
  key,
  acks,
}: ReplicatedWritesOptions): ReplicatedWrites {
  if (!acks || acks.replicas === 0) {
    return { store: (write) => writeOrUnavailable(connection, write) };
  }
  const { replicas, timeoutMs } = acks;
  const slot = calculateSlot(key);
  const waits = new WeakMap<Redis, SharedWait>();

  /** The connection a write of ours goes out on: the one WAIT must be sent on too. */
  function nodeConnection(): Redis | undefined {
    if (!(connection instanceof Cluster)) return connection;
    const address = connection.slots[slot]?.[0];
    return connection
      .nodes('master')
      .find((node) => `${node.options.host}:${node.options.port}` === address);
  }

  return {
    async store(write) {
      const deadline = Date.now() + timeoutMs;
      const node = nodeConnection();
      const generation = node && generationOf(node);
      const result = await writeOrUnavailable(connection, write);
      // A write that went out on another connection, or on one that has since reconnected,
      // cannot be covered by a WAIT sent now.
      if (!node || nodeConnection() !== node || generationOf(node) !== generation) {
        throw new QueueNotReplicatedError(
          'the connection to Redis changed before replicas confirmed the write',
        );
      }
      let wait = waits.get(node);
      if (!wait) waits.set(node, (wait = createSharedWait(node, replicas)));
      await wait(generation!, deadline);
      return result;
    },
  };
}

interface Waiter {
  readonly generation: number;
  readonly deadline: number;
  resolve(): void;
  reject(error: Error): void;
}

/** Resolves once `replicas` replicas hold every write made so far on the connection. */
type SharedWait = (generation: number, deadline: number) => Promise<void>;

/** One WAIT at a time on a connection; the writes that finish meanwhile wait on the next one. */
function createSharedWait(node: Redis, replicas: number): SharedWait {
  let waiting: Waiter[] = [];
  let sending = false;

  async function sendWaits(): Promise<void> {
    sending = true;
    while (waiting.length > 0) {
      const batch = waiting;
      waiting = [];
      const earliest = Math.min(...batch.map((waiter) => waiter.deadline));
      // WAIT's timeout is in milliseconds, and 0 would mean "forever".
      const timeout = Math.max(1, earliest - Date.now());
      let acknowledged = 0;
      let failure: unknown;
      try {
        acknowledged = await node.wait(replicas, timeout);
      } catch (error) {
        failure = error;
      }
      const generation = generationOf(node);
      for (const waiter of batch) {
        // Answered, on the socket its write went out on.
        const answered = failure === undefined && waiter.generation === generation;
        if (answered && acknowledged >= replicas) {
          waiter.resolve();
        } else if (answered && Date.now() < waiter.deadline) {
          waiting.push(waiter);
        } else {
          waiter.reject(
            new QueueNotReplicatedError(
              failure === undefined
                ? `${acknowledged} of ${replicas} replicas confirmed the write in time`
                : `waiting for replicas failed: ${failure instanceof Error ? failure.message : String(failure)}`,
            ),
          );
        }
      }
    }
    sending = false;
  }

  return (generation, deadline) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ generation, deadline, resolve, reject });
      if (!sending) void sendWaits();
    });
}

/** Counts a connection's reconnections: writes of one generation went out on one socket. */
const generations = new WeakMap<Redis, number>();

function generationOf(node: Redis): number {
  let generation = generations.get(node);
  if (generation === undefined) {
    generations.set(node, (generation = 0));
    node.on('close', () => generations.set(node, (generations.get(node) ?? 0) + 1));
  }
  return generation;
}

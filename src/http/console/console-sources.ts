/** What the delivery console reads and acts on: its pages and its API alike. */
import type { Queue } from 'bullmq';
import type { SimilarGroups } from '../../grouping/similar-groups.js';
import type { DeliveryQueue } from '../../queue/deliveries-queue.js';
import type { StatsSnapshot } from '../../queue/delivery-stats.js';
import type { Quarantine } from '../../queue/quarantine.js';
import type { BulkActions } from '../../runs/bulk-actions.js';
import type { DeadLetter } from '../../runs/dead-letter.js';
import type { DeliveryLog } from '../../runs/delivery-log.js';
import type { RunAgain } from '../../runs/restart.js';
import type { RunReader } from '../../runs/run-reader.js';

export interface ConsoleSources {
  readonly deliveryLog: DeliveryLog;
  readonly quarantine: Quarantine;
  /** Where a replayed quarantine entry is queued. */
  readonly deliveries: DeliveryQueue;
  readonly deadLetter: DeadLetter;
  /** The one reader of runs. */
  readonly runs: RunReader;
  /** Runs a handler again on a delivery it handled. */
  readonly runAgain: RunAgain;
  /** Retries or runs again every run of a search result, in batches. */
  readonly bulk: BulkActions;
  /** The handlers workers have, by name (see handler-roster.ts). */
  handlerNames(): Promise<string[]>;
  /** The queues whose depths the overview shows: deliveries, and each handler's runs. */
  queues(): Promise<readonly Queue[]>;
  /** What the receivers answered, per minute (see delivery-stats.ts). */
  readStats(): Promise<StatsSnapshot>;
  /** Groups of similar feedback (docs/similar.md); undefined when SIMILAR=off. */
  readonly similarGroups?: SimilarGroups | undefined;
  /** TRACE_URL_TEMPLATE: a delivery's trace id links to `{traceId}` in it. */
  readonly traceUrlTemplate?: string | undefined;
}

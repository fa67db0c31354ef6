/**
 * What a handler is given for one attempt of a run. Its logger, API client and abort signal are
 * made when the handler first reads them: a handler that has nothing to do for a record uses
 * none of them, and the run should not pay for them.
 */
import type { ApiClient, FeedbackApi } from '../api/client.js';
import type { Logger } from '../logger.js';
import type { SimilarFacts } from '../similar/similar-facts.js';
import type { Delivery } from '../webhooks/delivery.js';
import type { DeliveryInfo, HandlerContext } from './handler.js';

/** The fields every log line of a run carries. */
export interface RunBindings {
  readonly deliveryKey: string;
  readonly handler: string;
  readonly attempt: number;
}

/**
 * The context of one attempt. A class, so that its lazy fields are getters on the prototype
 * rather than made anew for every run; what only the worker may do (abort) is static, so the
 * handler sees nothing but its context.
 */
export class RunContext implements HandlerContext {
  readonly record: Delivery['record'];
  readonly delivery: DeliveryInfo;
  readonly attempt: number;
  readonly similar: SimilarFacts | undefined;
  readonly #bindings: RunBindings;
  readonly #parents: { readonly api: ApiClient; readonly logger: Logger };
  #controller: AbortController | undefined;
  #abortedFor: Error | undefined;
  #logger: Logger | undefined;
  #api: FeedbackApi | undefined;

  constructor(
    delivery: Delivery,
    bindings: RunBindings,
    parents: { readonly api: ApiClient; readonly logger: Logger },
    similar?: SimilarFacts,
  ) {
    this.#bindings = bindings;
    this.#parents = parents;
    this.record = delivery.record;
    this.delivery = { key: delivery.key, event: delivery.event, receivedAt: delivery.receivedAt };
    this.attempt = bindings.attempt;
    this.similar = similar;
  }

  /** Carries the delivery key, the handler's name and the attempt on every line. */
  get logger(): Logger {
    return (this.#logger ??= this.#parents.logger.child(this.#bindings));
  }

  /** Fires at the handler's timeout, or when the worker shuts down and can wait no longer. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#abortedFor) this.#controller.abort(this.#abortedFor);
    }
    return this.#controller.signal;
  }

  get api(): FeedbackApi {
    return (this.#api ??= this.#parents.api.withContext({
      logger: this.logger,
      signal: this.signal,
    }));
  }

  /**
   * Fires the run's signal: now, or as soon as the handler reads it. The first reason holds: a
   * shutdown after the timeout does not make a timed-out attempt an interrupted one, nor the
   * other way round.
   */
  static abort(run: RunContext, reason: Error): void {
    run.#abortedFor ??= reason;
    run.#controller?.abort(reason);
  }

  /** Why the run's signal fired, the first time; undefined while it has not. */
  static abortedFor(run: RunContext): Error | undefined {
    return run.#abortedFor;
  }
}

/** Which handlers a delivery goes to: those subscribed to its event whose `where` holds. */
import type { Delivery } from '../webhooks/delivery.js';
import type { Handler } from './handler.js';

export interface Route {
  readonly handler: Handler;
  /**
   * Set when `where` threw. The run is still created, and fails at once with this reason, so
   * the delivery shows up in the dead letter instead of silently going nowhere.
   */
  readonly whereError?: string;
}

export function route(handlers: readonly Handler[], delivery: Delivery): Route[] {
  const routes: Route[] = [];
  for (const handler of handlers) {
    if (!handler.events.includes(delivery.event)) continue;
    if (handler.where === undefined) {
      routes.push({ handler });
      continue;
    }
    try {
      if (handler.where(delivery.record)) routes.push({ handler });
    } catch (error) {
      routes.push({ handler, whereError: error instanceof Error ? error.message : String(error) });
    }
  }
  return routes;
}

/**
 * The entry for people who write handlers: `import { defineHandler } from
 * 'feedback-receiver/handler'`. Its declarations name only this package, pino, zod and bullmq,
 * which ship their own types, so a strict project type-checks it with nothing else installed;
 * the main entry also types the Express parts, which need `@types/express`.
 */
export {
  defineHandler,
  isHandler,
  type DeliveryInfo,
  type Handler,
  type HandlerBackoff,
  type HandlerContext,
  type HandlerDefinition,
  type HandlerRateLimit,
} from './worker/handler.js';
// BullMQ's own class, as BullMQ documents it; bullmq ships its types, so this costs no install.
export { UnrecoverableError } from 'bullmq';
export type { Logger } from './logger.js';
export type { SimilarFacts, SimilarMatchFact, SimilarWindow } from './similar/similar-facts.js';

export type {
  Assignee,
  ClientContext,
  CustomField,
  FeedbackRecord,
  Geo,
  Tag,
} from './webhooks/feedback-record.js';
export { FEEDBACK_CREATED, type Delivery, type DeliveryReceipt } from './webhooks/delivery.js';

export type { FeedbackApi, RequestOptions } from './api/client.js';
export type { FeedbackPatch, NewHook, Webhook } from './api/resources.js';
export * from './api/api-errors.js';

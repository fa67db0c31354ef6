/**
 * The public API, for people who embed the receiver in their own Express app, sign deliveries
 * in their tests, or write code against the delivery types.
 */
export {
  ConfigError,
  loadReceiverConfig,
  loadWorkerConfig,
  type ApiConfig,
  type ReceiverConfig,
  type SharedConfig,
  type TriageConfig,
  type WebhookConfig,
  type WorkerConfig,
} from './config.js';
export { createLogger, type Logger } from './logger.js';
export { ERROR_CODES, problem, type ErrorCode, type Problem } from './errors.js';

export { createApp, type AppDeps } from './http/app.js';
export {
  createWebhookRouter,
  WEBHOOK_PATH,
  type WebhookRouteDeps,
  type WebhookRouterOptions,
} from './http/webhook-route.js';
export {
  createReceiverDeps,
  startReceiver,
  type ReceiverDeps,
  type RunningReceiver,
} from './receiver.js';

export {
  createDeliveryQueue,
  DELIVERIES_QUEUE,
  type DeliveryQueue,
  type DeliveryQueueProducer,
  type EnqueueResult,
} from './queue/deliveries-queue.js';
export {
  createQuarantine,
  type Quarantine,
  type QuarantineAdded,
  type QuarantineBounds,
  type QuarantineEntry,
  type QuarantineSummary,
  type ReplayResult,
} from './queue/quarantine.js';
export { createProducerConnection, type RedisConnection } from './queue/redis.js';

export {
  AssigneeSchema,
  ClientContextSchema,
  CustomFieldSchema,
  FeedbackRecordSchema,
  GeoSchema,
  TagSchema,
  type Assignee,
  type ClientContext,
  type CustomField,
  type FeedbackRecord,
  type Geo,
  type Tag,
} from './webhooks/feedback-record.js';
export {
  FEEDBACK_CREATED,
  interpretPayload,
  deduplicationIdFor,
  type Delivery,
  type Interpretation,
} from './webhooks/delivery.js';
export { signHmacSha256, verifyHmacSha256 } from './webhooks/hmac-sha256.js';
export {
  signStandardWebhook,
  verifyStandardWebhook,
  type StandardWebhookMessage,
} from './webhooks/standard-webhooks.js';
export {
  createSignatureScheme,
  SIGNATURE_SCHEMES,
  type SignatureScheme,
  type SignatureSchemeName,
} from './webhooks/signature-scheme.js';
export type { SignatureCheck, SignatureFailure } from './webhooks/signature-check.js';

// Writing handlers (everything `feedback-receiver/handler` has), and talking to the feedback API.
export * from './handler.js';
export {
  createApiClient,
  type ApiClient,
  type ApiClientOptions,
  type FeedbackApi,
  type RequestOptions,
} from './api/client.js';
export * from './api/api-errors.js';
export type { FeedbackPatch, NewHook, Webhook } from './api/resources.js';
export { WebhookSchema } from './api/resources.js';
export type { RateLimiter } from './api/rate-limiter.js';
export { createRedisRateLimiter } from './queue/api-rate-limiter.js';

// Running and operating workers.
export {
  startWorker,
  resolveHandlers,
  type StartedWorker,
  type StartWorkerOptions,
} from './worker-process.js';
export {
  startWorkerRuntime,
  type WorkerRuntime,
  type WorkerRuntimeOptions,
} from './worker/runtime.js';
export { createRunReader, type RunReader, type RunState, type RunView } from './runs/run-reader.js';
export { decideRun, retryDelayMs, type RunDecision } from './worker/run-policy.js';
export { createDeadLetter, type DeadLetter, type DeadLetterEntry } from './runs/dead-letter.js';
export {
  createRunQueue,
  createRunQueues,
  runQueueName,
  type RunQueues,
  type AttemptRecord,
  type HandlerRunData,
  type RoutingResult,
} from './runs/run-queues.js';
export { ROUTING } from './history/delivery-history.js';
export { createWorkerConnection } from './queue/redis.js';
export {
  createTriageHandler,
  decideTriage,
  TRIAGE_HANDLER_NAME,
  type TriageDecision,
  type TriageHandlerOptions,
  type TriageResult,
} from './worker/triage/triage-handler.js';
export { isNotifyError, NotifyError, type NotifyMessage } from './worker/triage/notify.js';
export {
  loadTriageRules,
  parseTriageRules,
  TriageRulesError,
  type Condition,
  type FieldTest,
  type RuleTarget,
  type SimilarTest,
  type TriageRule,
  type TriageRules,
} from './worker/triage/rules.js';

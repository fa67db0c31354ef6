// A handler as its author writes it, importing only the handler entry: .ci/package-check
// type-checks it where nothing but feedback-receiver, typescript and @types/node is installed.
import {
  defineHandler,
  isFinalApiError,
  UnrecoverableError,
  type FeedbackRecord,
  type HandlerContext,
} from 'feedback-receiver/handler';

const lowRated = (record: FeedbackRecord): boolean =>
  typeof record.rating === 'number' && record.rating <= 2;

async function escalate({ record, api, logger, delivery, signal }: HandlerContext) {
  const tag = record.tags?.[0]?.name ?? 'untagged';
  try {
    const updated = await api.updateFeedback(record.id, { priority_id: 3 }, { signal });
    logger.info({ id: updated.id, tag, key: delivery.key }, 'escalated a low rating');
    return { id: updated.id };
  } catch (error) {
    if (isFinalApiError(error) && error.status === 404) {
      throw new UnrecoverableError(`feedback ${record.id} is gone`);
    }
    throw error;
  }
}

export default defineHandler({
  name: 'escalate-low-ratings',
  where: lowRated,
  attempts: 5,
  backoff: { type: 'fixed', delayMs: 2_000 },
  handle: escalate,
});

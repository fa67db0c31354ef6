// A custom handler, written against the package's public API. Load it into a worker with
//   HANDLERS=examples/handlers/low-rating-digest.mjs feedback-receiver work
//
// It appends one JSON line per low-rated record (rating 1 or 2) to a digest file, for a daily
// summary. It shows the parts of a handler: a unique name, a typed `where` filter, the record,
// a logger that already carries the delivery key, and retries with the handler's own policy.
import { appendFile } from 'node:fs/promises';
import { defineHandler } from 'feedback-receiver/handler';

/** Where the digest goes; LOW_RATING_DIGEST overrides it. */
const digestFile = process.env.LOW_RATING_DIGEST ?? 'low-ratings.jsonl';

export default defineHandler({
  name: 'low-rating-digest',
  // Only records someone rated 1 or 2; others never become a run of this handler.
  where: (record) => typeof record.rating === 'number' && record.rating <= 2,
  // A full disk or a missing folder is worth a few tries, then the dead letter.
  attempts: 3,
  backoff: { delayMs: 500 },
  async handle({ record, delivery, logger }) {
    const line = {
      receivedAt: delivery.receivedAt,
      id: record.id,
      rating: record.rating,
      title: record.title ?? null,
      url: record.url ?? null,
    };
    await appendFile(digestFile, `${JSON.stringify(line)}\n`);
    logger.info({ digestFile }, 'low rating written to the digest');
    return line;
  },
});

// A custom handler in TypeScript, loaded as it is: on Node 22.18 or later (24 recommended) Node
// strips the types itself, so there is no build step.
//   NOTIFY_CHAT_URL=https://hooks.example.com/... HANDLERS=examples/handlers/notify-chat.ts \
//     feedback-receiver work
//
// It posts one line to a chat's incoming webhook (Slack, Mattermost and others take
// `{"text": ...}`) for feedback rated 1 or reporting a crash. Node strips types but compiles
// nothing, so write only TypeScript that erases: types, interfaces, `import type`, `satisfies`;
// no enum, namespace or constructor parameter properties (`tsc --erasableSyntaxOnly` checks it).
import { defineHandler } from 'feedback-receiver/handler';
import type { FeedbackRecord } from 'feedback-receiver/handler';

interface ChatMessage {
  readonly text: string;
}

// Read once at start: without it the worker stops, naming the variable, instead of failing runs.
const chatUrl = process.env.NOTIFY_CHAT_URL;
if (!chatUrl) throw new Error('NOTIFY_CHAT_URL is not set');

function messageFor(record: FeedbackRecord): ChatMessage {
  const rating = typeof record.rating === 'number' ? `rated ${record.rating}` : 'not rated';
  return { text: `Feedback ${record.id} (${rating}): ${record.title ?? '(no title)'}` };
}

export default defineHandler({
  name: 'notify-chat',
  // `record` is a FeedbackRecord here, and `logger`, `signal` below are typed too: the types
  // come from defineHandler, with no annotation.
  where: (record) => record.rating === 1 || /crash/i.test(record.title ?? ''),
  attempts: 5,
  async handle({ record, logger, signal }) {
    const response = await fetch(chatUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(messageFor(record)),
      // The worker is shutting down and can wait no longer: give up; the run happens again later.
      signal,
    });
    // Thrown, so the run is retried with backoff (the URL is a secret: it stays out of the log).
    if (!response.ok) throw new Error(`the chat webhook answered ${response.status}`);
    logger.info({ status: response.status }, 'posted to the chat');
    return { posted: true };
  },
});

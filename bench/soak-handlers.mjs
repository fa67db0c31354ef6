// The soak's handlers (bench/soak.ts): one that always succeeds, one that fails the first
// attempt of 1 record in 20 and every attempt of 1 in 200 (into the dead letter), and one that
// asks the API who it is for 1 record in 400, against a sandbox that allows 5 calls a minute, so
// that the 429 path runs.
import { defineHandler } from 'feedback-receiver';

const numberOf = (id) => Number(/(\d+)$/.exec(id)?.[1] ?? 0);

export default [
  defineHandler({ name: 'soak-ok', handle: async ({ record }) => ({ id: record.id }) }),
  defineHandler({
    name: 'soak-flaky',
    attempts: 2,
    backoff: { type: 'fixed', delay: 200 },
    handle: async ({ record, attempt }) => {
      const n = numberOf(record.id);
      if (n % 200 === 7) throw new Error(`always fails ${record.id}`);
      if (n % 20 === 3 && attempt === 1) throw new Error(`fails once ${record.id}`);
    },
  }),
  defineHandler({
    name: 'soak-api',
    where: (record) => numberOf(record.id) % 400 === 11,
    handle: async ({ api, signal }) => {
      await api.getMe({ signal });
    },
  }),
];

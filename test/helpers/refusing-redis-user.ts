/** A Redis user of the test run's Redis that refuses to write one handler's runs. */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { expect, inject } from 'vitest';

export interface RefusingUser {
  /** The test Redis's URL, as that user. */
  readonly url: string;
  /** Lifts the refusal, as a Redis that has memory again. */
  allow(): Promise<void>;
  /** Deletes the user, which disconnects its clients: after the workers have closed. */
  remove(): Promise<void>;
}

/**
 * A Redis user that may read every key and write every key but the ones whose name ends in
 * `.<handler>`: the run of that handler (its job and its deduplication marker), whatever queue
 * holds it. Routing a delivery that handler takes fails.
 */
export async function refusingTheRunOf(prefix: string, handler: string): Promise<RefusingUser> {
  expect(handler, 'a one-letter handler name').toMatch(/^[a-z]$/);
  const admin = new Redis(inject('redisUrl'));
  const user = `refuses-${prefix}`;
  const password = randomUUID();
  await admin.call(
    'ACL',
    'SETUSER',
    user,
    'reset',
    'on',
    `>${password}`,
    '+@all',
    '&*',
    '%R~*',
    `~*[^${handler}]`,
    `~*[^.]${handler}`,
  );
  const url = new URL(inject('redisUrl'));
  url.username = user;
  url.password = password;
  return {
    url: url.toString(),
    allow: async () => void (await admin.call('ACL', 'SETUSER', user, 'allkeys')),
    remove: async () => {
      await admin.call('ACL', 'DELUSER', user);
      await admin.quit();
    },
  };
}

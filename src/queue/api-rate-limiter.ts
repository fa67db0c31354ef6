/**
 * The API's rate limit, shared by every worker process through Redis: a sliding window of the
 * last minute's requests. At most `limit` requests fall in any window, which satisfies the
 * service's limit however it counts its own minutes.
 *
 * A slot is taken before the request leaves, and the service counts it when it arrives. The time
 * between varies (a fresh connection, the process's first fetch, a busy event loop), so a request
 * that left early but arrived late could share the service's minute with one that left a whole
 * window later. Each slot is therefore held for the window plus a margin.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RateLimiter } from '../api/rate-limiter.js';
import type { RedisConnection } from './redis.js';

/** Takes a slot or says how long to wait: loaded once, with the module. */
const ACQUIRE = readFileSync(new URL('./acquire-rate-limit-slot.lua', import.meta.url), 'utf8');

type WithAcquireScript = RedisConnection & {
  acquireRateLimitSlot(key: string, limit: number, heldMs: number, slot: string): Promise<number>;
};

export interface RedisRateLimiterOptions {
  readonly connection: RedisConnection;
  readonly prefix: string;
  /** Requests per window, all processes together. */
  readonly limit: number;
  /** Default: 60 000 (a minute). */
  readonly windowMs?: number;
  /** How much longer than the window a slot is held. Default: a sixtieth of it (1 s a minute). */
  readonly marginMs?: number;
}

export function createRedisRateLimiter({
  connection,
  prefix,
  limit,
  windowMs = 60_000,
  marginMs = windowMs / 60,
}: RedisRateLimiterOptions): RateLimiter {
  const key = `${prefix}:api-rate-limit`;
  const heldMs = Math.ceil(windowMs + marginMs);
  // Sent by its SHA (EVALSHA) once Redis has it, not as a whole script with every request.
  const scripted = connection as WithAcquireScript;
  scripted.defineCommand('acquireRateLimitSlot', { numberOfKeys: 1, lua: ACQUIRE });
  return {
    acquire: async () =>
      Number(await scripted.acquireRateLimitSlot(key, limit, heldMs, randomUUID())),
  };
}

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
import type { RateLimiter } from '../api/rate-limiter.js';
import type { RedisConnection } from './redis.js';

// Redis's own clock, so that processes on machines whose clocks differ still agree.
const ACQUIRE = `
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
`;

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
  return {
    acquire: async () =>
      Number(await connection.eval(ACQUIRE, 1, key, limit, heldMs, randomUUID())),
  };
}

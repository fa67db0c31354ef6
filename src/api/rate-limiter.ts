/** Hands out permission to send one API request; the Redis one is shared by every worker. */
export interface RateLimiter {
  /** Takes a slot and returns 0, or returns how many milliseconds until one frees up. */
  acquire(): Promise<number>;
}

/** No limit: for tests and for code that talks to a local stand-in. */
export const unlimited: RateLimiter = { acquire: async () => 0 };

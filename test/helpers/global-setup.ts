import type { TestProject } from 'vitest/node';
import { startRedisServer } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A redis-server of this test run's own; each test uses its own key prefix in it. */
    redisUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const redis = await startRedisServer();
  project.provide('redisUrl', redis.url);
  return () => redis.stop();
}

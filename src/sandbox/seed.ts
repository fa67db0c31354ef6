/**
 * The sandbox's starting state: a few projects, users (one on a plan without API access) and
 * records, from default-seed.json. Replace it with `feedback-receiver sandbox --seed <file>`, a
 * JSON file of the same shape.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { FeedbackRecordSchema } from '../webhooks/feedback-record.js';
import defaultSeed from './default-seed.json' with { type: 'json' };

/** Plans with API access, as the spec says. */
export const API_PLANS = ['company', 'enterprise'] as const;

const UserSchema = z.strictObject({
  id: z.string().min(1),
  name: z.string(),
  email: z.string(),
  plan: z.string(),
  /** The user's API token; absent for users who only appear as assignees. */
  token: z.string().min(1).optional(),
  projects: z.array(z.string()),
});

export const SeedSchema = z.strictObject({
  projects: z.array(z.strictObject({ id: z.string().min(1), name: z.string() })),
  users: z.array(UserSchema),
  records: z.array(FeedbackRecordSchema),
});

export type Seed = z.infer<typeof SeedSchema>;
export type SandboxUser = z.infer<typeof UserSchema>;

export const SANDBOX_TOKEN = 'sandbox-token-company';
export const SANDBOX_STARTUP_TOKEN = 'sandbox-token-startup';

/** The seed in default-seed.json, checked against the schema when the module loads. */
export const DEFAULT_SEED: Seed = SeedSchema.parse(defaultSeed);

/** @throws {Error} naming the file and the first problem. */
export function loadSeed(path: string): Seed {
  const parsed = SeedSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`seed ${path}: ${issue?.path.join('.')}: ${issue?.message}`);
  }
  return parsed.data;
}

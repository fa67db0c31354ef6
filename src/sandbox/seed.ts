/**
 * The sandbox's starting state: a few projects, users (one on a plan without API access) and
 * records, from default-seed.json. Replace it with `feedback-receiver sandbox --seed <file>`, a
 * JSON file of the same shape.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { fileProblem } from '../file-problem.js';
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
  // Said with the file's name: Node's and JSON.parse's own messages name no option, or no file.
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`seed ${path}: cannot read it: ${fileProblem(error)}`, { cause: error });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`seed ${path}: not JSON: ${(error as Error).message}`, { cause: error });
  }
  const parsed = SeedSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`seed ${path}: ${issue?.path.join('.')}: ${issue?.message}`);
  }
  return parsed.data;
}

/**
 * The sandbox's starting state: a few projects, users (one on a plan without API access) and
 * records. Replace it with `feedback-receiver sandbox --seed <file>`, a JSON file of this shape.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { FeedbackRecordSchema } from '../webhooks/feedback-record.js';

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

export const DEFAULT_SEED: Seed = {
  projects: [
    { id: 'prj_shop', name: 'Web shop' },
    { id: 'prj_app', name: 'Mobile app' },
  ],
  users: [
    {
      id: 'usr_dana',
      name: 'Dana Müller',
      email: 'dana@example.com',
      plan: 'company',
      token: SANDBOX_TOKEN,
      projects: ['prj_shop', 'prj_app'],
    },
    {
      id: 'usr_lee',
      name: 'Lee Startup',
      email: 'lee@example.com',
      plan: 'startup',
      token: SANDBOX_STARTUP_TOKEN,
      projects: ['prj_shop'],
    },
    {
      id: 'usr_account_team',
      name: 'Account team',
      email: 'accounts@example.com',
      plan: 'company',
      projects: ['prj_shop', 'prj_app'],
    },
    {
      id: 'usr_payments_team',
      name: 'Payments team',
      email: 'payments@example.com',
      plan: 'company',
      projects: ['prj_shop'],
    },
  ],
  records: [
    {
      id: 'fb_seed_1',
      feedback_id: 1,
      project_id: 'prj_shop',
      title: 'Search is slow',
      rating: 3,
      priority_id: 2,
      priority: 'Normal',
      type_id: 2,
      type: 'Idea',
      status_id: 1,
      status: 'New',
      created_at: '2026-11-20T09:00:00.000Z',
      updated_at: '2026-11-20T09:00:00.000Z',
    },
  ],
};

/** @throws {Error} naming the file and the first problem. */
export function loadSeed(path: string): Seed {
  const parsed = SeedSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`seed ${path}: ${issue?.path.join('.')}: ${issue?.message}`);
  }
  return parsed.data;
}

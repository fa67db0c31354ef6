/** Request and response shapes of the feedback API, beyond the feedback record itself. */
import { z } from 'zod';

/** The fields `PATCH /v1/feedback/{id}` changes; only those set (not undefined) are sent. */
export interface FeedbackPatch {
  status_id?: number | undefined;
  priority_id?: number | undefined;
  type_id?: number | undefined;
  assignee_id?: string | undefined;
  title?: string | undefined;
  description?: string | undefined;
}

export const FEEDBACK_PATCH_FIELDS = [
  'status_id',
  'priority_id',
  'type_id',
  'assignee_id',
  'title',
  'description',
] as const satisfies readonly (keyof FeedbackPatch)[];

export interface NewHook {
  /** The event kind, e.g. `feedback.created`. */
  event: string;
  /** The HTTPS address that receives deliveries. */
  target_url: string;
  /** The secret the service signs deliveries with. */
  secret?: string;
}

export const WebhookSchema = z.looseObject({
  id: z.string(),
  event: z.string(),
  target_url: z.string(),
  active: z.boolean(),
  created_at: z.string(),
});

/** A project webhook as the service returns it (never with its secret). */
export type Webhook = z.infer<typeof WebhookSchema>;

/**
 * The feedback record as the API spec lists it. The spec does not say which fields are required
 * or nullable, so only `id` is required; every other field may be absent or null. Unknown fields
 * are kept: the service may add some, and handlers should see them.
 */
import { z } from 'zod';

const text = z.string().nullish();
const integer = z.number().int().nullish();
const number = z.number().nullish();

export const TagSchema = z.looseObject({ id: text, name: text });
export type Tag = z.infer<typeof TagSchema>;

export const CustomFieldSchema = z.looseObject({ id: text, name: text, value: text });
export type CustomField = z.infer<typeof CustomFieldSchema>;

export const AssigneeSchema = z.looseObject({ id: text, name: text });
export type Assignee = z.infer<typeof AssigneeSchema>;

export const GeoSchema = z.looseObject({ country_code: text, region: text, city: text });
export type Geo = z.infer<typeof GeoSchema>;

export const ClientContextSchema = z.looseObject({
  browser: text,
  browser_version: text,
  os_name: text,
  os_version: text,
  device_type: text,
  screen_width: integer,
  screen_height: integer,
  viewport_width: integer,
  viewport_height: integer,
  screen_pixel_depth: integer,
  screen_pixel_ratio: number,
  referrer: text,
  geo: GeoSchema.nullish(),
});
export type ClientContext = z.infer<typeof ClientContextSchema>;

/** Longest record id accepted: it becomes part of a Redis key. */
export const MAX_RECORD_ID_LENGTH = 256;

export const FeedbackRecordSchema = z.looseObject({
  id: z.string().min(1).max(MAX_RECORD_ID_LENGTH),
  feedback_id: integer,
  project_id: text,
  title: text,
  /** Free-form map of strings. */
  reporter: z.record(z.string(), z.string().nullable()).nullish(),
  assignee: AssigneeSchema.nullish(),
  /** Free-form data from the reporting application; values are strings or numbers. */
  user_data: z.record(z.string(), z.union([z.string(), z.number()]).nullable()).nullish(),
  url: text,
  description: text,
  rating: number,
  rating_type: text,
  net_promoter_score: number,
  priority_id: integer,
  priority: text,
  type_id: integer,
  type: text,
  status_id: integer,
  status: text,
  source_type: text,
  created_at: text,
  updated_at: text,
  comment_count: integer,
  tags: z.array(TagSchema).nullish(),
  custom_fields: z.array(CustomFieldSchema).nullish(),
  client_context: ClientContextSchema.nullish(),
  screenshot_url: text,
  video_url: text,
  console_log_url: text,
});

/** A feedback record as the service sends it and as `PATCH /v1/feedback/{id}` returns it. */
export type FeedbackRecord = z.infer<typeof FeedbackRecordSchema>;

/**
 * The record's project, or '' when the record names none: what grouping keys a project by. The
 * spec makes `project_id` the owning project's identifier, the one its paths take
 * (`/v1/projects/{projectId}/hooks`): an empty one identifies no project, as a missing or null
 * one does, so the three are one "no project" (the spec gives no other meaning to any of them).
 */
export function projectOf(record: FeedbackRecord): string {
  return typeof record.project_id === 'string' ? record.project_id : '';
}

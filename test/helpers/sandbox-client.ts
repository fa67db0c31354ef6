/** What a test does to the sandbox as a reporter would: create a record, and read it back. */
import { expect } from 'vitest';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';

/** Creates a record in a project of the sandbox, which delivers it to the project's hooks. */
export async function createRecord(
  sandboxUrl: string,
  projectId: string,
  fields: Partial<FeedbackRecord>,
): Promise<FeedbackRecord> {
  const response = await fetch(`${sandboxUrl}/sandbox/projects/${projectId}/feedback`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(fields),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as FeedbackRecord;
}

/** The record as the sandbox holds it now. */
export async function recordInSandbox(sandboxUrl: string, id: string): Promise<FeedbackRecord> {
  return (await (await fetch(`${sandboxUrl}/sandbox/feedback/${id}`)).json()) as FeedbackRecord;
}

/**
 * The sandbox's state, in memory: projects, users, feedback records and hooks, and the rules the
 * spec gives for changing them. No HTTP here.
 */
import { randomBytes } from 'node:crypto';
import type { FeedbackPatch } from '../api/resources.js';
import type { FeedbackRecord } from '../webhooks/feedback-record.js';
import type { Seed, SandboxUser } from './seed.js';

/** The spec does not publish the names behind the ids; the sandbox uses this fixed table. */
export const NAMES = {
  status: { 1: 'New', 2: 'In progress', 3: 'Resolved', 4: 'Closed' },
  priority: { 1: 'Low', 2: 'Normal', 3: 'High', 4: 'Critical' },
  type: { 1: 'Bug', 2: 'Idea', 3: 'Praise', 4: 'Question' },
} as const satisfies Record<string, Record<number, string>>;

export interface SandboxHook {
  readonly id: string;
  readonly projectId: string;
  readonly event: string;
  readonly targetUrl: string;
  /** Never returned by the API; used to sign deliveries. */
  readonly secret: string | undefined;
  readonly active: boolean;
  readonly createdAt: string;
}

export class SandboxState {
  readonly projects: Map<string, { id: string; name: string }>;
  readonly users: SandboxUser[];
  readonly records = new Map<string, FeedbackRecord>();
  readonly hooks: SandboxHook[] = [];
  private nextFeedbackId = 1;

  constructor(seed: Seed) {
    this.projects = new Map(seed.projects.map((project) => [project.id, project]));
    this.users = seed.users;
    for (const record of seed.records) {
      this.records.set(record.id, record);
      this.nextFeedbackId = Math.max(this.nextFeedbackId, (record.feedback_id ?? 0) + 1);
    }
  }

  userByToken(token: string): SandboxUser | undefined {
    return this.users.find((user) => user.token !== undefined && user.token === token);
  }

  user(id: string): SandboxUser | undefined {
    return this.users.find((user) => user.id === id);
  }

  /** Applies only the fields sent; the names follow the ids; `updated_at` moves. */
  patch(id: string, patch: FeedbackPatch, now = new Date()): FeedbackRecord {
    const record = this.records.get(id);
    if (!record) throw new Error(`no record ${id}`);
    const next: FeedbackRecord = { ...record };
    if (patch.status_id !== undefined) {
      next.status_id = patch.status_id;
      next.status = nameOf('status', patch.status_id);
    }
    if (patch.priority_id !== undefined) {
      next.priority_id = patch.priority_id;
      next.priority = nameOf('priority', patch.priority_id);
    }
    if (patch.type_id !== undefined) {
      next.type_id = patch.type_id;
      next.type = nameOf('type', patch.type_id);
    }
    if (patch.assignee_id !== undefined) {
      next.assignee = { id: patch.assignee_id, name: this.user(patch.assignee_id)?.name ?? null };
    }
    if (patch.title !== undefined) next.title = patch.title;
    if (patch.description !== undefined) next.description = patch.description;
    next.updated_at = now.toISOString();
    this.records.set(id, next);
    return next;
  }

  addHook(
    projectId: string,
    hook: { event: string; targetUrl: string; secret: string | undefined },
  ): SandboxHook {
    const created: SandboxHook = {
      id: `hook_${randomBytes(6).toString('hex')}`,
      projectId,
      ...hook,
      active: true,
      createdAt: new Date().toISOString(),
    };
    this.hooks.push(created);
    return created;
  }

  /** Creates a record in a project, as a reporter would; returns it. */
  createRecord(
    projectId: string,
    fields: Partial<FeedbackRecord>,
    now = new Date(),
  ): FeedbackRecord {
    const feedbackId = this.nextFeedbackId++;
    const statusId = fields.status_id ?? 1;
    const priorityId = fields.priority_id ?? 2;
    const typeId = fields.type_id ?? 1;
    const record: FeedbackRecord = {
      ...fields,
      id: fields.id ?? `fb_${randomBytes(5).toString('hex')}`,
      feedback_id: feedbackId,
      project_id: projectId,
      status_id: statusId,
      status: nameOf('status', statusId),
      priority_id: priorityId,
      priority: nameOf('priority', priorityId),
      type_id: typeId,
      type: nameOf('type', typeId),
      comment_count: 0,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    };
    this.records.set(record.id, record);
    return record;
  }
}

export function nameOf(table: keyof typeof NAMES, id: number): string | null {
  return (NAMES[table] as Record<number, string>)[id] ?? null;
}

export function isKnownId(table: keyof typeof NAMES, id: number): boolean {
  return Object.hasOwn(NAMES[table], id);
}

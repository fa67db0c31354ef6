/**
 * Auto-triage, the built-in handler: applies the rules to each new record and sends one PATCH
 * with the fields the matching rules set, only those that differ from the record; nothing when
 * nothing matches or nothing would change.
 */
import type { FeedbackPatch } from '../../api/resources.js';
import type { FeedbackRecord } from '../../webhooks/feedback-record.js';
import { defineHandler, type Handler } from '../handler.js';
import { meets } from './conditions.js';
import type { TriageRules } from './rules.js';

export const TRIAGE_HANDLER_NAME = 'auto-triage';

/** What the handler returns, and the console shows. */
export interface TriageResult extends TriageDecision {
  /** Whether the PATCH was sent (not when nothing changes, nor in dry run). */
  readonly sent: boolean;
  /** After a PATCH: the fields sent, as the API answered them (its updated record). */
  readonly answer?: Record<string, unknown>;
}

export interface TriageDecision {
  /** Names of the rules that matched and were applied, in order. */
  readonly matched: readonly string[];
  /** The fields to send: what the matched rules set, less what the record already has. */
  readonly patch: FeedbackPatch;
}

export function decideTriage(rules: TriageRules, record: FeedbackRecord): TriageDecision {
  const matching = rules.rules.filter((rule) => meets(record, rule.when));
  const applied = rules.mode === 'first' ? matching.slice(0, 1) : matching;
  const wanted: FeedbackPatch = Object.assign({}, ...applied.map((rule) => rule.set));
  return { matched: applied.map((rule) => rule.name), patch: changesTo(record, wanted) };
}

/** The fields a PATCH can set, as the record has them. */
function patchable(record: FeedbackRecord): FeedbackPatch {
  return {
    status_id: record.status_id ?? undefined,
    priority_id: record.priority_id ?? undefined,
    type_id: record.type_id ?? undefined,
    assignee_id: record.assignee?.id ?? undefined,
    title: record.title ?? undefined,
    description: record.description ?? undefined,
  };
}

function changesTo(record: FeedbackRecord, wanted: FeedbackPatch): FeedbackPatch {
  const current = patchable(record);
  const patch: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(wanted)) {
    if (value !== undefined && current[field as keyof FeedbackPatch] !== value) {
      patch[field] = value;
    }
  }
  return patch as FeedbackPatch;
}

/** The fields that were sent, as the API's answer has them: whether it took the change. */
function answerTo(patch: FeedbackPatch, updated: FeedbackRecord): Record<string, unknown> {
  const now = patchable(updated);
  return Object.fromEntries(
    Object.keys(patch).map((field) => [field, now[field as keyof FeedbackPatch] ?? null]),
  );
}

export interface TriageHandlerOptions {
  readonly rules: TriageRules;
  /** Log the PATCH it would send, and send nothing. */
  readonly dryRun?: boolean;
}

export function createTriageHandler({ rules, dryRun = false }: TriageHandlerOptions): Handler {
  return defineHandler({
    name: TRIAGE_HANDLER_NAME,
    async handle({ record, api, logger, signal }) {
      const { matched, patch } = decideTriage(rules, record);
      const fields = Object.keys(patch).length;
      if (matched.length === 0) {
        logger.info({ triage: { matched } }, 'triage: no rule matched');
      } else if (fields === 0) {
        logger.info({ triage: { matched } }, 'triage: record already as the rules want it');
      } else if (dryRun) {
        logger.info({ triage: { matched, patch, dryRun } }, 'triage dry run: would PATCH');
      } else {
        const updated = await api.updateFeedback(record.id, patch, { signal });
        const answer = answerTo(patch, updated);
        logger.info({ triage: { matched, patch, answer } }, 'triage: record updated');
        return { matched, patch, sent: true, answer } satisfies TriageResult;
      }
      return { matched, patch, sent: false } satisfies TriageResult;
    },
  });
}

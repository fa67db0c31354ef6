/**
 * Auto-triage, the built-in handler: applies the rules to each new record and sends one PATCH
 * with the fields the matching rules set, only those that differ from the record; nothing when
 * nothing matches or nothing would change. Rules that target the group's first record send it
 * one PATCH of their own, and rules that notify post one message each, after the PATCHes.
 */
import type { FeedbackPatch } from '../../api/resources.js';
import type { SimilarFacts } from '../../similar/similar-facts.js';
import type { FeedbackRecord } from '../../webhooks/feedback-record.js';
import { defineHandler, type Handler } from '../handler.js';
import { meets, similarWindowsOf } from './conditions.js';
import { NOTIFY_TIMEOUT_MS, notifyMessage, sendNotification, type NotifyTarget } from './notify.js';
import { TriageRulesError, type TriageRule, type TriageRules } from './rules.js';

export const TRIAGE_HANDLER_NAME = 'auto-triage';

/**
 * Where the console shows a delivery, under CONSOLE_URL. The worker does not import the console
 * (src/http); this path is the one its router serves.
 */
export const CONSOLE_DELIVERY_PATH = '/admin/deliveries/';

/** What the handler returns, and the console shows. */
export interface TriageResult extends TriageDecision {
  /** Whether the PATCH of this record was sent (not when nothing changes, nor in dry run). */
  readonly sent: boolean;
  /** After a PATCH: the fields sent, as the API answered them (its updated record). */
  readonly answer?: Record<string, unknown>;
  /** Whether the PATCH of the group's first record was sent. */
  readonly firstSent?: boolean;
  /** The variables (never the URLs) of the notifies that were sent. */
  readonly notified?: readonly string[];
}

export interface TriageDecision {
  /** Names of the rules that matched and were applied, in order. */
  readonly matched: readonly string[];
  /** The fields to send: what the matched rules set, less what the record already has. */
  readonly patch: FeedbackPatch;
  /**
   * What rules with `"target": "first"` set on the group's first record, when it is another
   * record than this one. All their fields: this handler does not read that record.
   */
  readonly first?: { readonly recordId: string; readonly patch: FeedbackPatch };
  /** Rules with `"target": "first"` that matched without a group (grouping off): not applied. */
  readonly noGroup?: readonly string[];
  /** The notifies of the matched rules, in order, by the variable that holds each URL. */
  readonly notify?: readonly { readonly rule: string; readonly urlFrom: string }[];
}

/**
 * @param similar what grouping told the delivery (`ctx.similar`); without it, group-size
 *   conditions are false and rules that target the first record are not applied.
 */
export function decideTriage(
  rules: TriageRules,
  record: FeedbackRecord,
  similar?: SimilarFacts,
): TriageDecision {
  const matching = rules.rules.filter((rule) => meets(record, rule.when, similar));
  const applied = rules.mode === 'first' ? matching.slice(0, 1) : matching;
  const firstId = similar?.group.first.recordId;
  const onThis = (rule: TriageRule) => rule.target === 'this' || firstId === record.id;
  const onFirst = applied.filter((rule) => rule.set && !onThis(rule) && firstId !== undefined);
  const noGroup = applied.filter((rule) => rule.set && !onThis(rule) && firstId === undefined);
  const wanted: FeedbackPatch = Object.assign(
    {},
    ...applied.filter(onThis).map((rule) => rule.set ?? {}),
  );
  const notify = applied.flatMap((rule) =>
    rule.notify ? [{ rule: rule.name, urlFrom: rule.notify.urlFrom }] : [],
  );
  return {
    matched: applied.map((rule) => rule.name),
    patch: changesTo(record, wanted),
    ...(firstId !== undefined && onFirst.length > 0
      ? {
          first: {
            recordId: firstId,
            patch: Object.assign({}, ...onFirst.map((rule) => rule.set)) as FeedbackPatch,
          },
        }
      : {}),
    ...(noGroup.length > 0 ? { noGroup: noGroup.map((rule) => rule.name) } : {}),
    ...(notify.length > 0 ? { notify } : {}),
  };
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
  /** Log the PATCHes and notifies it would send, and send nothing. */
  readonly dryRun?: boolean;
  /**
   * Reads the environment variable a rule's `notify.urlFrom` names (the worker passes its
   * configuration's reader). Default: none is set, so a rule that notifies is refused.
   */
  readonly readVariable?: (name: string) => string | undefined;
  /** The console's public base URL (CONSOLE_URL), for links; without it links are paths. */
  readonly consoleUrl?: string | undefined;
  /** Per notify POST. Default: NOTIFY_TIMEOUT_MS (10 000). */
  readonly notifyTimeoutMs?: number;
}

/**
 * @throws {TriageRulesError} when a rule notifies through a variable that is not set, does not
 *   hold an http(s) URL, or holds one with a user or password (which fetch refuses): the worker
 *   refuses to start rather than drop the messages.
 */
export function createTriageHandler({
  rules,
  dryRun = false,
  readVariable = () => undefined,
  consoleUrl,
  notifyTimeoutMs = NOTIFY_TIMEOUT_MS,
}: TriageHandlerOptions): Handler {
  const targets = notifyTargets(rules, readVariable);
  return defineHandler({
    name: TRIAGE_HANDLER_NAME,
    similarWindows: similarWindowsOf(rules.rules.map((rule) => rule.when)),
    async handle({ record, delivery, similar, api, logger, signal }) {
      const decision = decideTriage(rules, record, similar);
      const { matched, patch, first, noGroup, notify = [] } = decision;
      const fields = Object.keys(patch).length;
      const notified = notify.map(({ urlFrom }) => urlFrom);
      if (noGroup) {
        logger.info({ triage: { noGroup } }, 'triage: no group, so no first record to PATCH');
      }
      if (matched.length === 0) {
        logger.info({ triage: { matched } }, 'triage: no rule matched');
        return { ...decision, sent: false } satisfies TriageResult;
      }
      if (fields === 0 && !first && notify.length === 0) {
        logger.info({ triage: { matched } }, 'triage: record already as the rules want it');
        return { ...decision, sent: false } satisfies TriageResult;
      }
      if (dryRun) {
        logger.info(
          { triage: { matched, patch, first, notify: notified, dryRun } },
          fields > 0 || first ? 'triage dry run: would PATCH' : 'triage dry run: would notify',
        );
        return { ...decision, sent: false } satisfies TriageResult;
      }
      let answer: Record<string, unknown> | undefined;
      if (fields > 0) {
        const updated = await api.updateFeedback(record.id, patch, { signal });
        answer = answerTo(patch, updated);
        logger.info({ triage: { matched, patch, answer } }, 'triage: record updated');
      }
      if (first) {
        await api.updateFeedback(first.recordId, first.patch, { signal });
        logger.info({ triage: { matched, first } }, "triage: group's first record updated");
      }
      const link = `${consoleUrl ?? ''}${CONSOLE_DELIVERY_PATH}${encodeURIComponent(delivery.key)}`;
      for (const { rule, urlFrom } of notify) {
        const message = notifyMessage({
          rule,
          title: record.title,
          groupSize: similar?.group.size ?? null,
          link,
        });
        await sendNotification(targets.get(urlFrom) as NotifyTarget, message, {
          signal,
          timeoutMs: notifyTimeoutMs,
        });
        logger.info({ triage: { rule, notified: urlFrom } }, 'triage: notified');
      }
      return {
        ...decision,
        sent: fields > 0,
        ...(answer ? { answer } : {}),
        ...(first ? { firstSent: true } : {}),
        ...(notified.length > 0 ? { notified } : {}),
      } satisfies TriageResult;
    },
  });
}

/** Each notify's URL, read once at start; errors name the variable, never what it holds. */
function notifyTargets(
  rules: TriageRules,
  readVariable: (name: string) => string | undefined,
): Map<string, NotifyTarget> {
  const targets = new Map<string, NotifyTarget>();
  for (const rule of rules.rules) {
    if (!rule.notify || targets.has(rule.notify.urlFrom)) continue;
    const { urlFrom } = rule.notify;
    const url = readVariable(urlFrom)?.trim();
    if (!url) {
      throw new TriageRulesError(
        `TRIAGE_RULES: rule "${rule.name}" notifies the URL in ${urlFrom}, which is not set`,
      );
    }
    const parsed = httpUrl(url);
    if (!parsed) {
      throw new TriageRulesError(
        `TRIAGE_RULES: rule "${rule.name}" notifies the URL in ${urlFrom}, which does not hold an http:// or https:// URL`,
      );
    }
    // fetch refuses a URL with credentials in it: every message would fail, after the start.
    if (parsed.username !== '' || parsed.password !== '') {
      throw new TriageRulesError(
        `TRIAGE_RULES: rule "${rule.name}" notifies the URL in ${urlFrom}, which holds a user or password: fetch sends no message to such a URL; use one without them`,
      );
    }
    targets.set(urlFrom, { urlFrom, url });
  }
  return targets;
}

function httpUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `notify` action of a rule: one short JSON message POSTed to a URL, such as a Slack
 * incoming webhook (which shows `text`) or a chat workflow's. The URL is a secret (whoever holds
 * it can post to the channel): it comes from an environment variable the rule names, and no
 * error, log line or result carries it, only the variable's name.
 */
import { cutText } from '../../cut-text.js';

/** How long one POST may take, answer included; the run's own signal can cut it shorter. */
export const NOTIFY_TIMEOUT_MS = 10_000;

/** How much of a record's title a message carries. */
export const NOTIFY_TITLE_CHARS = 200;

/** The message's body, as the receiving end reads it. */
export interface NotifyMessage {
  /** One line for people: what happened, the title and the link (Slack shows this). */
  readonly text: string;
  readonly rule: string;
  readonly title: string;
  /** The group's size, this delivery included; null without grouping. */
  readonly groupSize: number | null;
  /** The console's page of the delivery. */
  readonly link: string;
}

/** A notify that got no 2xx answer. Its message names the variable, never the URL. */
export class NotifyError extends Error {
  override readonly name = 'NotifyError';
  constructor(
    message: string,
    /** The HTTP status, when there was an answer. */
    readonly status?: number,
  ) {
    super(message);
  }
}

export function isNotifyError(error: unknown): error is NotifyError {
  return error instanceof Error && error.name === 'NotifyError';
}

export interface NotifyTarget {
  /** The environment variable that holds the URL: what errors and logs name. */
  readonly urlFrom: string;
  readonly url: string;
}

export function notifyMessage(facts: {
  readonly rule: string;
  readonly title: string | null | undefined;
  readonly groupSize: number | null;
  readonly link: string;
}): NotifyMessage {
  const whole = facts.title ?? '';
  const title =
    whole.length > NOTIFY_TITLE_CHARS ? `${cutText(whole, NOTIFY_TITLE_CHARS - 1)}…` : whole;
  const reports = facts.groupSize === null ? '' : ` (${facts.groupSize} similar reports)`;
  // Slack reads <, > and & in `text` as markup: a visitor's title must stay text.
  const text = `${facts.rule}${reports}: ${slackEscape(title || '(no title)')} ${facts.link}`;
  return { text, rule: facts.rule, title, groupSize: facts.groupSize, link: facts.link };
}

function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * POSTs the message; resolves on a 2xx answer.
 *
 * @throws {NotifyError} on any other answer, no answer, or the timeout, so the run is retried.
 *   When `signal` fired (the worker shuts down), its reason, as every run effect does.
 */
export async function sendNotification(
  target: NotifyTarget,
  message: NotifyMessage,
  { signal, timeoutMs = NOTIFY_TIMEOUT_MS }: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<void> {
  const timeout = AbortSignal.timeout(timeoutMs);
  let response: Response;
  try {
    response = await fetch(target.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(message),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      redirect: 'error',
    });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    // The cause is left out: fetch's errors can quote the URL.
    const why = timeout.aborted
      ? `no answer within ${timeoutMs} ms`
      : `no answer (${codeOf(error)})`;
    throw new NotifyError(`notify ${target.urlFrom}: ${why}`);
  }
  // The body is not kept: only the status says whether the message was taken.
  await response.body?.cancel();
  if (!response.ok) {
    throw new NotifyError(`notify ${target.urlFrom}: answered ${response.status}`, response.status);
  }
}

function codeOf(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  const code = cause instanceof Error && 'code' in cause ? cause.code : undefined;
  return typeof code === 'string' && /^[A-Z_]{1,40}$/.test(code) ? code : 'network error';
}

/**
 * Registering the receiver as a project's hook target, shared by `hooks register` and the demo.
 */
import { randomBytes } from 'node:crypto';
import type { FeedbackApi } from '../api/client.js';
import type { Webhook } from '../api/resources.js';
import { WEBHOOK_PATH } from '../http/webhook-route.js';
import { UsageError } from './command.js';

export interface RegisterHookInput {
  readonly projectId: string;
  readonly url: string;
  readonly event?: string;
  /** Generated when absent: 32 random bytes, 43 characters of base64url. */
  readonly secret?: string | undefined;
}

export interface RegisteredHook {
  readonly hook: Webhook;
  readonly secret: string;
  readonly generated: boolean;
}

/**
 * A URL without a path gets the receiver's route, as `send` does: the receiver answers 404 at
 * `/`, so a hook registered there would fail every delivery.
 *
 * @throws {UsageError} for a URL that is not https and not on a loopback host.
 */
export async function registerHook(
  api: FeedbackApi,
  input: RegisterHookInput,
): Promise<RegisteredHook> {
  const url = readHookUrl(input.url);
  if (url.pathname === '/') url.pathname = WEBHOOK_PATH;
  const generated = input.secret === undefined;
  const secret = input.secret ?? randomBytes(32).toString('base64url');
  const hook = await api.createHook(input.projectId, {
    event: input.event ?? 'feedback.created',
    target_url: url.href,
    secret,
  });
  return { hook, secret, generated };
}

/** The spec requires HTTPS target URLs; plain http is allowed only to this machine, for testing. */
export function readHookUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url ${url} is not a URL`);
  }
  const loopback =
    parsed.hostname === 'localhost' ||
    parsed.hostname === '[::1]' ||
    /^127\.\d+\.\d+\.\d+$/.test(parsed.hostname);
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && loopback)) {
    throw new UsageError(`--url must be https (plain http only to localhost), got ${url}`);
  }
  return parsed;
}

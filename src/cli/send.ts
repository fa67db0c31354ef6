import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadReceiverConfig, loadWebhookSecret } from '../config.js';
import { fileProblem } from '../file-problem.js';
import { WEBHOOK_PATH } from '../http/webhook-route.js';
import { signHmacSha256 } from '../webhooks/hmac-sha256.js';
import { signStandardWebhook } from '../webhooks/standard-webhooks.js';
import { requireOption, UsageError, type Command } from './command.js';
import { terminalText } from './terminal-text.js';

export const sendCommand: Command = {
  name: 'send',
  summary: 'sign a delivery as the service would and post it to a receiver',
  help: `Usage: feedback-receiver send --url <receiver url> [--file delivery.json]

Signs the body with the configured scheme and first secret (SIGNATURE_SCHEME,
WEBHOOK_SECRET or WEBHOOK_SECRET_FILE), posts it and prints the answer. Without
--file it sends a realistic generated feedback record. A URL without a path
gets ${WEBHOOK_PATH}. Exits 0 on a 2xx answer, 1 otherwise.`,
  options: { url: { type: 'string' }, file: { type: 'string' } },
  async run(values) {
    const target = webhookUrl(requireOption(values, 'url', 'send'));
    if (loadWebhookSecret() === undefined) {
      throw new UsageError(
        "send signs with the receiver's secret: set WEBHOOK_SECRET (or WEBHOOK_SECRET_FILE, a file with one secret per line) as the receiver has it",
      );
    }
    const config = loadReceiverConfig();
    const body =
      typeof values.file === 'string'
        ? readBody(values.file)
        : Buffer.from(JSON.stringify(sampleRecord()));
    const secret = config.webhook.secrets[0]!;
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (config.webhook.scheme === 'hmac-sha256') {
      headers[config.webhook.signatureHeader] = signHmacSha256(body, secret);
    } else {
      const id = `msg_${randomUUID().replaceAll('-', '')}`;
      const timestamp = String(Math.floor(Date.now() / 1000));
      headers['webhook-id'] = id;
      headers['webhook-timestamp'] = timestamp;
      headers['webhook-signature'] = signStandardWebhook({ id, timestamp, body }, secret);
    }
    const response = await fetch(target, { method: 'POST', headers, body }).catch(
      (error: unknown) => {
        throw new Error(unreachable(target, error), { cause: error });
      },
    );
    // Whatever answers at --url writes this: its escapes are shown, never obeyed.
    const answer = `${response.statusText}\n${await response.text()}`;
    console.log(`${response.status} ${terminalText(answer, { keepLines: true })}`);
    if (!response.ok) process.exitCode = 1;
  },
};

function readBody(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new Error(`cannot read --file ${file}: ${fileProblem(error)}`, {
      cause: error,
    });
  }
}

/** Why a request to the receiver got no answer, in words: fetch itself says only "fetch failed". */
function unreachable(url: string, error: unknown): string {
  const cause = (error as { cause?: NodeJS.ErrnoException }).cause;
  switch (cause?.code) {
    case 'ECONNREFUSED':
      return `nothing listens at ${url} (connection refused); is the receiver running there?`;
    case 'ENOTFOUND':
      return `cannot send to ${url}: no such host`;
    default:
      return `cannot send to ${url}: ${cause?.message ?? (error as Error).message}`;
  }
}

function webhookUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url ${url} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(
      `--url must be http or https, got ${url}; see feedback-receiver send --help`,
    );
  }
  // fetch refuses them, and its message would repeat the password.
  if (parsed.username || parsed.password) {
    throw new UsageError(
      '--url holds a user or password, which the receiver takes none of; see feedback-receiver send --help',
    );
  }
  if (parsed.pathname === '/') parsed.pathname = WEBHOOK_PATH;
  return parsed.href;
}

/** A feedback record with every field the spec lists, filled in plausibly. */
export function sampleRecord() {
  const id = `fb_${randomBytes(5).toString('hex')}`;
  const now = new Date().toISOString();
  return {
    id,
    feedback_id: Math.floor(Math.random() * 1_000_000),
    project_id: 'prj_shop',
    title: 'Checkout button does nothing on Safari',
    reporter: { email: 'dana@example.com', name: 'Dana Müller' },
    assignee: null,
    user_data: { plan: 'pro', account_age_days: 412 },
    url: 'https://shop.example.com/checkout',
    description: 'I click "Pay now" and nothing happens.',
    rating: 2,
    rating_type: 'stars',
    net_promoter_score: 3,
    priority_id: 2,
    priority: 'Normal',
    type_id: 1,
    type: 'Bug',
    status_id: 1,
    status: 'New',
    source_type: 'widget',
    created_at: now,
    updated_at: now,
    comment_count: 0,
    tags: [{ id: 'tag_1', name: 'checkout' }],
    custom_fields: [{ id: 'cf_1', name: 'Order number', value: 'A-99812' }],
    client_context: {
      browser: 'Safari',
      browser_version: '18.1',
      os_name: 'macOS',
      os_version: '15.1',
      device_type: 'desktop',
      screen_width: 2560,
      screen_height: 1440,
      viewport_width: 1280,
      viewport_height: 720,
      screen_pixel_depth: 24,
      screen_pixel_ratio: 2,
      referrer: 'https://shop.example.com/cart',
      geo: { country_code: 'DE', region: 'Berlin', city: 'Berlin' },
    },
    screenshot_url: `https://cdn.example.com/screens/${id}.png`,
    video_url: null,
    console_log_url: `https://cdn.example.com/logs/${id}.json`,
  };
}

import { apiFromEnv, TOKEN_FILE_OPTION, TOKEN_HELP } from './api-from-env.js';
import { readFileSync } from 'node:fs';
import { loadWebhookSecret } from '../config.js';
import { requireOption, UsageError, type Command } from './command.js';
import { readHookUrl, registerHook } from './register-hook.js';
import { terminalText } from './terminal-text.js';

export const hooksRegisterCommand: Command = {
  name: 'hooks register',
  summary: "register the receiver's URL as a project's hook target",
  help: `Usage: feedback-receiver hooks register --project <id> --url <receiver url>
         [--event feedback.created] [--secret-file <path>] [--token-file <path>]

Calls POST /v1/projects/{id}/hooks. The URL must be https (plain http only to
localhost), e.g. https://hooks.example.com/webhooks/feedback; a URL without a path
gets /webhooks/feedback, the receiver's route. The hook's secret
comes from --secret-file <path>, else from WEBHOOK_SECRET or WEBHOOK_SECRET_FILE
(the first secret, as the receiver reads them), never from an argument, which
would show in the process list and the shell's history. With none of them a
strong random secret is generated and printed once: give it to the receiver as
WEBHOOK_SECRET.
${TOKEN_HELP}`,
  options: {
    project: { type: 'string' },
    url: { type: 'string' },
    event: { type: 'string', default: 'feedback.created' },
    // Taken only to be refused with a reason, rather than as an unknown option.
    secret: { type: 'string' },
    'secret-file': { type: 'string' },
    ...TOKEN_FILE_OPTION,
  },
  async run(values) {
    if (values.secret !== undefined) {
      throw new UsageError(
        '--secret would put the secret in the process list and the shell history; use --secret-file <path>, or WEBHOOK_SECRET in the environment',
      );
    }
    const secret = secretFrom(values['secret-file']);
    const projectId = requireOption(values, 'project', 'hooks register');
    const url = requireOption(values, 'url', 'hooks register');
    // A wrong --url is a usage error, said before a missing FEEDBACK_API_URL or token.
    readHookUrl(url);
    const api = apiFromEnv(values['token-file']);
    const registered = await registerHook(api, {
      projectId,
      url,
      event: String(values.event),
      secret,
    });
    const { hook, generated } = registered;
    // The API's answer: its escapes are shown, never obeyed.
    console.log(
      terminalText(
        `Registered hook ${hook.id} on project ${projectId}: ${hook.event} -> ${hook.target_url}`,
      ),
    );
    if (generated) {
      console.log(`
The hook's secret, shown this once; the service signs every delivery with it:

  ${registered.secret}

Give it to the receiver, e.g. WEBHOOK_SECRET='${registered.secret}' feedback-receiver serve
(or write it to a file and set WEBHOOK_SECRET_FILE). To rotate later, set
WEBHOOK_SECRET=<new>,<old> until the old one is no longer used.`);
    }
  },
};

/** The secret from --secret-file, else the receiver's own variables; undefined: generate one. */
function secretFrom(file: string | boolean | undefined): string | undefined {
  if (typeof file !== 'string') return loadWebhookSecret();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new Error(`cannot read the secret file ${file}`);
  }
  const secret = text.split(/\r?\n/, 1)[0]?.trim();
  if (!secret) throw new Error(`the secret file ${file} holds no secret`);
  return secret;
}

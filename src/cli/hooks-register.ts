import { apiFromEnv, TOKEN_FILE_OPTION, TOKEN_HELP } from './api-from-env.js';
import { requireOption, type Command } from './command.js';
import { registerHook } from './register-hook.js';

export const hooksRegisterCommand: Command = {
  name: 'hooks register',
  summary: "register the receiver's URL as a project's hook target",
  help: `Usage: feedback-receiver hooks register --project <id> --url <receiver url>
         [--event feedback.created] [--secret <secret>] [--token-file <path>]

Calls POST /v1/projects/{id}/hooks. The URL must be https (plain http only to
localhost), e.g. https://hooks.example.com/webhooks/feedback. Without --secret a
strong random secret is generated and printed once: give it to the receiver as
WEBHOOK_SECRET.
${TOKEN_HELP}`,
  options: {
    project: { type: 'string' },
    url: { type: 'string' },
    event: { type: 'string', default: 'feedback.created' },
    secret: { type: 'string' },
    ...TOKEN_FILE_OPTION,
  },
  async run(values) {
    const projectId = requireOption(values, 'project', 'hooks register');
    const url = requireOption(values, 'url', 'hooks register');
    const api = apiFromEnv(values['token-file']);
    const { hook, secret, generated } = await registerHook(api, {
      projectId,
      url,
      event: String(values.event),
      secret: typeof values.secret === 'string' ? values.secret : undefined,
    });
    console.log(
      `Registered hook ${hook.id} on project ${projectId}: ${hook.event} -> ${hook.target_url}`,
    );
    if (generated) {
      console.log(`
The hook's secret, shown this once; the service signs every delivery with it:

  ${secret}

Give it to the receiver, e.g. WEBHOOK_SECRET='${secret}' feedback-receiver serve
(or write it to a file and set WEBHOOK_SECRET_FILE). To rotate later, set
WEBHOOK_SECRET=<new>,<old> until the old one is no longer used.`);
    }
  },
};

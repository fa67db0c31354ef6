import { isApiError } from '../api/api-errors.js';
import { apiFromEnv, TOKEN_FILE_OPTION, TOKEN_HELP } from './api-from-env.js';
import type { Command } from './command.js';
import { terminalText } from './terminal-text.js';

export const whoamiCommand: Command = {
  name: 'whoami',
  summary: 'say whose API token is configured, and whether the API accepts it',
  help: `Usage: feedback-receiver whoami [--token-file <path>]

Calls GET /v1/me and says whose token it is. ${TOKEN_HELP}`,
  options: TOKEN_FILE_OPTION,
  async run(values) {
    const api = apiFromEnv(values['token-file']);
    let me: unknown;
    try {
      me = await api.getMe();
    } catch (error) {
      if (isApiError(error) && error.status === 401) {
        throw new Error(
          'the feedback API refused the token (401): it is missing, wrong or revoked',
          { cause: error },
        );
      }
      if (isApiError(error) && error.status === 403) {
        throw new Error(
          'the token is valid, but the feedback API refused it (403): the API is available only on the Company and Enterprise plans',
          { cause: error },
        );
      }
      throw error;
    }
    console.log(terminalText(describeUser(me)));
  },
};

function describeUser(me: unknown): string {
  if (me !== null && typeof me === 'object') {
    const { name, email, id } = me as Record<string, unknown>;
    const who = [name, email === undefined ? undefined : `<${String(email)}>`]
      .filter((part) => part !== undefined)
      .join(' ');
    if (who !== '')
      return `The token belongs to ${who}${id === undefined ? '' : ` (${String(id)})`}.`;
  }
  return `The API accepts the token. GET /v1/me answered: ${JSON.stringify(me)}`;
}

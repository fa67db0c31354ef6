/**
 * The API client for one-off commands (hooks register, whoami): URL and token from the
 * environment, or the token from --token-file, never from an argument that would show in the
 * process list.
 */
import { readFileSync } from 'node:fs';
import { createApiClient, type ApiClient } from '../api/client.js';
import { loadWorkerConfig } from '../config.js';

export const TOKEN_FILE_OPTION = { 'token-file': { type: 'string' } } as const;

export const TOKEN_HELP = `The API's address comes from FEEDBACK_API_URL; the token from FEEDBACK_API_TOKEN,
FEEDBACK_API_TOKEN_FILE, or --token-file <path> (never from an argument).`;

export function apiFromEnv(tokenFile: string | boolean | undefined): ApiClient {
  const { api } = loadWorkerConfig();
  let token = api.token;
  if (typeof tokenFile === 'string') {
    try {
      token = readFileSync(tokenFile, 'utf8').trim();
    } catch {
      throw new Error(`cannot read the token file ${tokenFile}`);
    }
  }
  if (api.baseUrl === undefined) throw new Error('FEEDBACK_API_URL is not set');
  if (!token) throw new Error('no API token: set FEEDBACK_API_TOKEN or pass --token-file');
  return createApiClient({ baseUrl: api.baseUrl, token, timeoutMs: api.timeoutMs });
}

import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

const minimal = { WEBHOOK_SECRET: 'dev-secret' };

function configError(env: NodeJS.ProcessEnv, readFile?: (path: string) => string): string {
  try {
    loadConfig(env, readFile ? { readFile } : {});
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('fills in every default', () => {
    expect(loadConfig(minimal)).toEqual({
      port: 3000,
      host: '0.0.0.0',
      redisUrl: 'redis://127.0.0.1:6379',
      queuePrefix: 'feedback-receiver',
      logLevel: 'info',
      webhook: {
        scheme: 'hmac-sha256',
        secrets: ['dev-secret'],
        signatureHeader: 'X-Ybug-Signature',
        toleranceSeconds: 300,
        bodyLimitBytes: 1024 * 1024,
        dedupeTtlSeconds: 604800,
        invalidPayload: 'quarantine',
      },
    });
  });

  it('returns a frozen configuration', () => {
    const config = loadConfig(minimal);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.webhook.secrets)).toBe(true);
  });

  it('refuses to start without a secret', () => {
    expect(configError({})).toMatch(/WEBHOOK_SECRET: required/);
    expect(configError({ WEBHOOK_SECRET: '' })).toMatch(/WEBHOOK_SECRET: required/);
    expect(configError({ WEBHOOK_SECRET: ' , ' })).toMatch(/WEBHOOK_SECRET: holds no secret/);
  });

  it('accepts several comma-separated secrets for rotation', () => {
    const config = loadConfig({ WEBHOOK_SECRET: 'new-secret, old-secret' });
    expect(config.webhook.secrets).toEqual(['new-secret', 'old-secret']);
  });

  it('reads one secret per line from WEBHOOK_SECRET_FILE', () => {
    const files: Record<string, string> = {
      '/run/secrets/webhook': 'new-secret\r\nold-secret\n\n',
    };
    const config = loadConfig(
      { WEBHOOK_SECRET_FILE: '/run/secrets/webhook' },
      {
        readFile: (path) => files[path]!,
      },
    );
    expect(config.webhook.secrets).toEqual(['new-secret', 'old-secret']);
  });

  it('names the secret file it cannot read', () => {
    const missing = () => {
      throw Object.assign(new Error('nope'), { code: 'ENOENT' });
    };
    expect(configError({ WEBHOOK_SECRET_FILE: '/nowhere' }, missing)).toMatch(
      /WEBHOOK_SECRET_FILE: cannot read \/nowhere \(ENOENT\)/,
    );
  });

  it('refuses WEBHOOK_SECRET and WEBHOOK_SECRET_FILE together', () => {
    expect(configError({ ...minimal, WEBHOOK_SECRET_FILE: '/x' })).toMatch(/both set/);
  });

  it.each([
    ['PORT', 'http', /PORT: expected a whole number from 0 to 65535/],
    ['PORT', '70000', /PORT: expected a whole number from 0 to 65535/],
    ['REDIS_URL', 'localhost:6379', /REDIS_URL: expected a redis:\/\/ or rediss:\/\/ URL/],
    ['QUEUE_PREFIX', 'a:b', /QUEUE_PREFIX: expected a key prefix/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL: /],
    ['SIGNATURE_SCHEME', 'md5', /SIGNATURE_SCHEME: /],
    ['SIGNATURE_HEADER', 'X Sig', /SIGNATURE_HEADER: expected an HTTP header name/],
    ['SIGNATURE_TOLERANCE_SECONDS', '0', /SIGNATURE_TOLERANCE_SECONDS: expected a whole number/],
    ['BODY_LIMIT', 'huge', /BODY_LIMIT: expected a size/],
    ['DEDUPE_TTL_SECONDS', '-1', /DEDUPE_TTL_SECONDS: expected a whole number/],
    ['INVALID_PAYLOAD', 'drop', /INVALID_PAYLOAD: /],
  ])('names %s when it is %j', (name, value, message) => {
    expect(configError({ ...minimal, [name]: value })).toMatch(message);
  });

  it('reports every wrong variable at once', () => {
    const message = configError({ ...minimal, PORT: 'x', LOG_LEVEL: 'y' });
    expect(message).toMatch(/PORT/);
    expect(message).toMatch(/LOG_LEVEL/);
  });

  it('never repeats a secret in its messages', () => {
    const message = configError({
      WEBHOOK_SECRET: 'not-a-whsec-secret',
      SIGNATURE_SCHEME: 'standard-webhooks',
    });
    expect(message).toMatch(/secret #1 is not of the form whsec_<base64>/);
    expect(message).not.toContain('not-a-whsec-secret');
  });

  it('parses sizes as Express writes them', () => {
    expect(loadConfig({ ...minimal, BODY_LIMIT: '512kb' }).webhook.bodyLimitBytes).toBe(524288);
    expect(loadConfig({ ...minimal, BODY_LIMIT: '2mb' }).webhook.bodyLimitBytes).toBe(2097152);
    expect(loadConfig({ ...minimal, BODY_LIMIT: '1000' }).webhook.bodyLimitBytes).toBe(1000);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ ...minimal, PORT: '' }).port).toBe(3000);
  });
});

import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  loadReceiverConfig,
  loadWebhookSecret,
  loadWorkerConfig,
  tracing,
} from '../../src/config.js';

const minimal = { WEBHOOK_SECRET: 'dev-secret' };

function configError(
  env: NodeJS.ProcessEnv,
  readFile?: (path: string) => string,
  load: typeof loadReceiverConfig | typeof loadWorkerConfig = loadReceiverConfig,
): string {
  try {
    load(env, readFile ? { readFile } : {});
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  }
  throw new Error('expected a ConfigError');
}

describe('loadReceiverConfig', () => {
  it('fills in every default', () => {
    expect(loadReceiverConfig(minimal)).toEqual({
      port: 3000,
      host: '0.0.0.0',
      redisUrl: 'redis://127.0.0.1:6379',
      redisUrlFromEnv: false,
      queuePrefix: 'feedback-receiver',
      logLevel: 'info',
      logPretty: false,
      dedupeTtlSeconds: 604800,
      similar: undefined,
      completedJobRetentionSeconds: 86400,
      webhook: {
        scheme: 'hmac-sha256',
        secrets: ['dev-secret'],
        signatureHeader: 'X-Ybug-Signature',
        toleranceSeconds: 300,
        bodyLimitBytes: 1024 * 1024,
        invalidPayload: 'quarantine',
      },
      quarantine: { maxEntries: 10_000, maxAgeDays: 7, maxBytes: 100 * 1024 * 1024 },
      ackReplicas: { replicas: 0, timeoutMs: 1000 },
    });
  });

  it('returns a frozen configuration', () => {
    const config = loadReceiverConfig(minimal);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.webhook.secrets)).toBe(true);
  });

  it('refuses to start without a secret', () => {
    expect(configError({})).toMatch(/WEBHOOK_SECRET: required/);
    expect(configError({ WEBHOOK_SECRET: '' })).toMatch(/WEBHOOK_SECRET: required/);
    expect(configError({ WEBHOOK_SECRET: ' , ' })).toMatch(/WEBHOOK_SECRET: holds no secret/);
  });

  it('accepts several comma-separated secrets for rotation', () => {
    const config = loadReceiverConfig({ WEBHOOK_SECRET: 'new-secret, old-secret' });
    expect(config.webhook.secrets).toEqual(['new-secret', 'old-secret']);
  });

  it('reads one secret per line from WEBHOOK_SECRET_FILE', () => {
    const files: Record<string, string> = {
      '/run/secrets/webhook': 'new-secret\r\nold-secret\n\n',
    };
    const config = loadReceiverConfig(
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
    ['REDIS_URL', 'localhost:6379', /REDIS_URL: expected redis:\/\/, rediss:\/\/, redis\+sentinel/],
    ['REDIS_URL', 'redis+sentinel://127.0.0.1:26379', /REDIS_URL: expected the master name/],
    ['REDIS_URL', 'redis+cluster://127.0.0.1:7000/0', /REDIS_URL: a cluster-mode Redis has no/],
    ['REDIS_URL', 'redis+cluster://127.0.0.1:99999', /REDIS_URL: expected host:port/],
    ['REDIS_URL', 'redis://127.0.0.1:99999', /REDIS_URL: expected host:port after the scheme/],
    ['QUEUE_PREFIX', 'a:b', /QUEUE_PREFIX: expected a key prefix/],
    ['QUEUE_PREFIX', '{a}', /QUEUE_PREFIX: expected a key prefix/],
    ['ACK_REPLICAS', '-1', /ACK_REPLICAS: expected a whole number from 0/],
    ['ACK_REPLICAS_TIMEOUT_MS', '0', /ACK_REPLICAS_TIMEOUT_MS: expected a whole number from 1/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL: /],
    ['SIGNATURE_SCHEME', 'md5', /SIGNATURE_SCHEME: /],
    ['SIGNATURE_HEADER', 'X Sig', /SIGNATURE_HEADER: expected an HTTP header name/],
    ['SIGNATURE_TOLERANCE_SECONDS', '0', /SIGNATURE_TOLERANCE_SECONDS: expected a whole number/],
    ['BODY_LIMIT', 'huge', /BODY_LIMIT: expected a size/],
    ['BODY_LIMIT', '10s', /BODY_LIMIT: expected a size/],
    ['BODY_LIMIT', '1m', /BODY_LIMIT: expected a size/],
    ['BODY_LIMIT', '1mbx', /BODY_LIMIT: expected a size/],
    ['BODY_LIMIT', '1e6', /BODY_LIMIT: expected a size/],
    ['BODY_LIMIT', '1.5', /BODY_LIMIT: expected a size/],
    ['QUARANTINE_MAX_BYTES', '100m', /QUARANTINE_MAX_BYTES: expected a size/],
    ['DEDUPE_TTL_SECONDS', '-1', /DEDUPE_TTL_SECONDS: expected a whole number/],
    [
      'DEDUPE_TTL_SECONDS',
      '99999999999999',
      /DEDUPE_TTL_SECONDS: expected a whole number from 1 to 315360000/,
    ],
    [
      'COMPLETED_JOB_RETENTION_SECONDS',
      '99999999999999',
      /COMPLETED_JOB_RETENTION_SECONDS: expected a whole number from 1 to 315360000/,
    ],
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

  it('never repeats the password of a REDIS_URL it refuses', () => {
    const message = configError({ ...minimal, REDIS_URL: 'redis+sentinel://:hunter2@10.0.0.1' });
    expect(message).toMatch(/REDIS_URL: expected the master name/);
    expect(message).not.toContain('hunter2');
  });

  it('puts the key prefix in braces on a cluster-mode Redis, and only there', () => {
    const prefixOn = (url: string) =>
      loadReceiverConfig({ ...minimal, REDIS_URL: url, QUEUE_PREFIX: 'fr' }).queuePrefix;
    expect(prefixOn('redis+cluster://10.0.0.1:7000,10.0.0.2:7000')).toBe('{fr}');
    expect(prefixOn('redis+sentinel://10.0.0.1:26379/mymaster')).toBe('fr');
    expect(prefixOn('rediss://user:pw@redis.example.com:6380')).toBe('fr');
  });

  it('parses sizes as Express writes them', () => {
    expect(loadReceiverConfig({ ...minimal, BODY_LIMIT: '512kb' }).webhook.bodyLimitBytes).toBe(
      524288,
    );
    expect(loadReceiverConfig({ ...minimal, BODY_LIMIT: '2mb' }).webhook.bodyLimitBytes).toBe(
      2097152,
    );
    expect(loadReceiverConfig({ ...minimal, BODY_LIMIT: '1000' }).webhook.bodyLimitBytes).toBe(
      1000,
    );
    expect(loadReceiverConfig({ ...minimal, BODY_LIMIT: '1.5 MB' }).webhook.bodyLimitBytes).toBe(
      1572864,
    );
    expect(loadReceiverConfig({ ...minimal, BODY_LIMIT: '2048b' }).webhook.bodyLimitBytes).toBe(
      2048,
    );
  });

  it('refuses a quarantine whose bytes could not hold the largest body', () => {
    expect(configError({ ...minimal, BODY_LIMIT: '2mb', QUARANTINE_MAX_BYTES: '1mb' })).toMatch(
      /QUARANTINE_MAX_BYTES: .* less than BODY_LIMIT/,
    );
    const rejecting = { ...minimal, BODY_LIMIT: '2mb', QUARANTINE_MAX_BYTES: '1mb' };
    expect(() => loadReceiverConfig({ ...rejecting, INVALID_PAYLOAD: 'reject' })).not.toThrow();
    expect(
      loadReceiverConfig({
        ...minimal,
        QUARANTINE_MAX_ENTRIES: '500',
        QUARANTINE_MAX_AGE_DAYS: '30',
      }).quarantine,
    ).toEqual({ maxEntries: 500, maxAgeDays: 30, maxBytes: 100 * 1024 * 1024 });
  });

  it('treats an empty variable as unset', () => {
    expect(loadReceiverConfig({ ...minimal, PORT: '' }).port).toBe(3000);
  });
});

describe('loadWebhookSecret (send, hooks register)', () => {
  const files = { readFile: () => 'from-the-file\n' };

  it('treats an empty variable as unset, as the receiver does (.env.example lists both)', () => {
    const env = { WEBHOOK_SECRET: '', WEBHOOK_SECRET_FILE: '/run/secrets/webhook' };
    expect(loadWebhookSecret(env, files)).toBe('from-the-file');
    expect(loadWebhookSecret({ WEBHOOK_SECRET: '', WEBHOOK_SECRET_FILE: '' }, files)).toBe(
      undefined,
    );
  });

  it('takes the first of several secrets', () => {
    expect(loadWebhookSecret({ WEBHOOK_SECRET: 'newest,older' })).toBe('newest');
  });
});

describe('loadWorkerConfig', () => {
  it('needs no webhook secret, and fills in every default', () => {
    expect(loadWorkerConfig({})).toEqual({
      redisUrl: 'redis://127.0.0.1:6379',
      redisUrlFromEnv: false,
      queuePrefix: 'feedback-receiver',
      logLevel: 'info',
      logPretty: false,
      dedupeTtlSeconds: 604800,
      similar: undefined,
      completedJobRetentionSeconds: 86400,
      ackReplicas: { replicas: 0, timeoutMs: 1000 },
      api: { baseUrl: undefined, token: undefined, rateLimitPerMinute: 100, timeoutMs: 10_000 },
      handlerModules: [],
      concurrency: 10,
      lockSeconds: 30,
      shutdownTimeoutSeconds: 30,
      metricsPort: 9464,
      triage: undefined,
      historyMaxDeliveries: 1_000_000,
    });
  });

  it('reads HISTORY_MAX_DELIVERIES, and refuses a value out of range naming it', () => {
    expect(loadWorkerConfig({ HISTORY_MAX_DELIVERIES: '50' }).historyMaxDeliveries).toBe(50);
    for (const value of ['0', '-5', '1e6', 'many', '100000001']) {
      expect(() => loadWorkerConfig({ HISTORY_MAX_DELIVERIES: value })).toThrow(
        /HISTORY_MAX_DELIVERIES: expected a whole number from 1 to 100000000/,
      );
    }
  });

  it('reads SIMILAR, SIMILAR_THRESHOLD and SIMILAR_KEEP, and refuses values out of range', () => {
    expect(loadWorkerConfig({ SIMILAR: 'off', SIMILAR_THRESHOLD: '0.9' }).similar).toBeUndefined();
    expect(
      loadWorkerConfig({ SIMILAR: 'on', SIMILAR_THRESHOLD: '0.5', SIMILAR_KEEP: '500' }).similar,
    ).toEqual({
      threshold: 0.5,
      keep: 500,
    });
    for (const env of [
      { SIMILAR: 'maybe' },
      { SIMILAR_THRESHOLD: '1.5' },
      { SIMILAR_THRESHOLD: '-0.1' },
      { SIMILAR_KEEP: '0' },
    ]) {
      expect(() => loadWorkerConfig(env)).toThrow(ConfigError);
    }
  });

  it('splits HANDLERS and trims the API URL', () => {
    const config = loadWorkerConfig({
      HANDLERS: './a.mjs, ./b.mjs,',
      FEEDBACK_API_URL: 'https://api.example.com/',
    });
    expect(config.handlerModules).toEqual(['./a.mjs', './b.mjs']);
    expect(config.api.baseUrl).toBe('https://api.example.com');
  });

  it('reads ACK_REPLICAS, as the receiver does', () => {
    const config = loadWorkerConfig({ ACK_REPLICAS: '2', ACK_REPLICAS_TIMEOUT_MS: '500' });
    expect(config.ackReplicas).toEqual({ replicas: 2, timeoutMs: 500 });
  });

  it('reads the token from FEEDBACK_API_TOKEN_FILE', () => {
    const config = loadWorkerConfig(
      { FEEDBACK_API_TOKEN_FILE: '/run/secrets/token' },
      { readFile: () => 'tok_123\n' },
    );
    expect(config.api.token).toBe('tok_123');
  });

  it('requires the API URL and token for triage that sends PATCHes', () => {
    const message = configError({ TRIAGE_RULES: 'rules.json' }, undefined, loadWorkerConfig);
    expect(message).toMatch(/FEEDBACK_API_URL and FEEDBACK_API_TOKEN/);
    const dryRun = loadWorkerConfig({ TRIAGE_RULES: 'rules.json', TRIAGE_DRY_RUN: 'true' });
    expect(dryRun.triage).toMatchObject({ rulesPath: 'rules.json', dryRun: true });
  });

  it("reads the console's public URL, and the variables a rule's notify names", () => {
    const config = loadWorkerConfig({
      TRIAGE_RULES: 'rules.json',
      TRIAGE_DRY_RUN: 'true',
      CONSOLE_URL: 'https://feedback.example.com/',
      SLACK_WEBHOOK_URL: 'https://hooks.example.com/T0/B0/x',
      EMPTY: '',
    });
    expect(config.triage?.consoleUrl).toBe('https://feedback.example.com');
    expect(config.triage?.readVariable('SLACK_WEBHOOK_URL')).toBe(
      'https://hooks.example.com/T0/B0/x',
    );
    expect(config.triage?.readVariable('EMPTY')).toBeUndefined();
    expect(config.triage?.readVariable('UNSET')).toBeUndefined();
  });

  it.each([
    ['FEEDBACK_API_URL', 'api.example.com', /FEEDBACK_API_URL: expected an http/],
    ['FEEDBACK_API_RATE_LIMIT', '0', /FEEDBACK_API_RATE_LIMIT: expected a whole number/],
    ['WORKER_CONCURRENCY', 'many', /WORKER_CONCURRENCY: expected a whole number/],
    ['TRIAGE_DRY_RUN', 'maybe', /TRIAGE_DRY_RUN: expected true or false/],
    ['CONSOLE_URL', 'feedback.example.com', /CONSOLE_URL: expected an http/],
    ['SHUTDOWN_TIMEOUT_SECONDS', '-5', /SHUTDOWN_TIMEOUT_SECONDS: expected a whole number/],
  ])('names %s when it is %j', (name, value, message) => {
    expect(configError({ [name]: value }, undefined, loadWorkerConfig)).toMatch(message);
  });

  it('never repeats the token in its messages', () => {
    const message = configError(
      { FEEDBACK_API_TOKEN: 'tok_secret_value', FEEDBACK_API_TOKEN_FILE: '/x' },
      undefined,
      loadWorkerConfig,
    );
    expect(message).not.toContain('tok_secret_value');
  });
});

describe('tracing (OpenTelemetry variables)', () => {
  const on = { ...minimal, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

  it('is off without an endpoint, and with OTEL_SDK_DISABLED', () => {
    expect(loadReceiverConfig(minimal).tracing).toBeUndefined();
    expect(loadReceiverConfig({ ...minimal, OTEL_SERVICE_NAME: 'x' }).tracing).toBeUndefined();
    expect(loadReceiverConfig({ ...on, OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
  });

  // On Node 20 an endpoint stops the start (the next test); CI runs this file on Node 24 too.
  const sdkRuns = Number(process.versions.node.split('.')[0]) >= 23;
  it.runIf(sdkRuns)(
    'is on with an endpoint, named for each role unless OTEL_SERVICE_NAME says otherwise',
    () => {
      expect(loadReceiverConfig(on).tracing).toEqual({
        endpoint: 'http://collector:4318/v1/traces',
        protocol: 'http/protobuf',
        serviceName: 'feedback-receiver',
        sampler: { name: 'parentbased_always_on', ratio: 1 },
      });
      expect(
        loadReceiverConfig({
          ...on,
          OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
          OTEL_TRACES_SAMPLER_ARG: '0.25',
        }).tracing?.sampler,
      ).toEqual({ name: 'parentbased_traceidratio', ratio: 0.25 });
      expect(loadWorkerConfig(on).tracing?.serviceName).toBe('feedback-receiver-worker');
      expect(loadWorkerConfig({ ...on, OTEL_SERVICE_NAME: 'triage' }).tracing?.serviceName).toBe(
        'triage',
      );
      expect(
        loadReceiverConfig({
          ...on,
          OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=prod,service.name=intake',
        }).tracing?.serviceName,
      ).toBe('intake');
      expect(
        loadReceiverConfig({
          ...minimal,
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://api.example.com/otlp/traces',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        }).tracing,
      ).toMatchObject({ endpoint: 'https://api.example.com/otlp/traces', protocol: 'http/json' });
    },
  );

  it('needs Node 22.15 or later, and says so in one sentence', () => {
    const vars = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(() => tracing(vars, 'feedback-receiver', '20.19.0')).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT: tracing needs Node 22\.15\.0 or later \(this is Node 20\.19\.0\)/,
    );
    expect(() => tracing(vars, 'feedback-receiver', '22.14.9')).toThrow(ConfigError);
    expect(tracing(vars, 'feedback-receiver', '22.15.0')).toBeDefined();
    expect(tracing({}, 'feedback-receiver', '20.19.0')).toBeUndefined();
  });

  it('names each wrong variable', () => {
    const wrong = configError({
      ...minimal,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_HEADERS: 'no-equals-sign',
      OTEL_TRACES_SAMPLER: 'sometimes',
      OTEL_TRACES_SAMPLER_ARG: '1.5',
      OTEL_BSP_MAX_QUEUE_SIZE: 'lots',
    });
    for (const variable of [
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_TRACES_SAMPLER',
      'OTEL_TRACES_SAMPLER_ARG',
      'OTEL_BSP_MAX_QUEUE_SIZE',
    ]) {
      expect(wrong).toContain(`${variable}:`);
    }
    expect(configError({ ...minimal, TRACE_URL_TEMPLATE: 'http://jaeger/trace/' })).toContain(
      'TRACE_URL_TEMPLATE: expected an http(s) URL with {traceId} in it',
    );
    // A header's value may be an API key: the message never repeats it.
    expect(
      configError({
        ...minimal,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_HEADERS: 'api-key',
      }),
    ).not.toContain('api-key');
  });

  it('checks nothing of OpenTelemetry while tracing is off: a platform may set some for all', () => {
    expect(
      loadWorkerConfig({
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_TRACES_SAMPLER: 'xray',
        OTEL_SERVICE_NAME: 'whatever',
      }).tracing,
    ).toBeUndefined();
  });
});

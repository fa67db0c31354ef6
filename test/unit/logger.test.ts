import { describe, expect, it } from 'vitest';
import { censorSecrets, createLogger } from '../../src/logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: 'info',
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  return { logger, lines };
}

describe('the logger', () => {
  it('logs an error by its name, message, stack, code and cause, never what else it carries', () => {
    const { logger, lines } = capture();
    const redisError = Object.assign(new Error('ERR something failed'), {
      name: 'ReplyError',
      command: { name: 'evalsha', args: ['sha', '{"title":"private-record-text"}'] },
    });
    const wrapped = new Error('could not store', { cause: redisError });
    logger.error({ err: redisError }, 'as err');
    logger.error({ error: redisError, nested: { failure: wrapped } }, 'under other keys');
    logger.error(wrapped, 'as the first argument');
    expect(JSON.stringify(lines)).not.toContain('private-record-text');
    expect(lines[0]?.err).toMatchObject({ type: 'ReplyError', message: 'ERR something failed' });
    expect(lines[2]?.err).toMatchObject({
      message: 'could not store',
      cause: { type: 'ReplyError', message: 'ERR something failed' },
    });
  });

  it('censors secrets, tokens and signatures wherever they sit in a logged object', () => {
    const { logger, lines } = capture();
    logger.info(
      {
        token: 'leak-1',
        headers: {
          authorization: 'Bearer leak-2',
          'X-Ybug-Signature': 'sha256=leak-3',
          accept: '*/*',
        },
        req: { headers: { cookie: 'c=leak-4', 'webhook-signature': 'v1,leak-5' } },
        config: { webhook: { secrets: ['leak-6', 'leak-7'] } },
        attempts: [{ secret: 'leak-8' }],
      },
      'line',
    );
    expect(lines[0]).toMatchObject({
      token: '[redacted]',
      headers: { authorization: '[redacted]', 'X-Ybug-Signature': '[redacted]', accept: '*/*' },
      req: { headers: { cookie: '[redacted]', 'webhook-signature': '[redacted]' } },
      config: { webhook: { secrets: '[redacted]' } },
      attempts: [{ secret: '[redacted]' }],
      msg: 'line',
    });
    expect(JSON.stringify(lines)).not.toContain('leak');
  });

  it("censors a child logger's bindings", () => {
    const { logger, lines } = capture();
    logger.child({ token: 'leak-1', handler: 'triage' }).info('line');
    expect(lines[0]).toMatchObject({ token: '[redacted]', handler: 'triage' });
  });

  it('leaves the logged object as the caller made it', () => {
    const logged = { headers: { authorization: 'Bearer tok' }, outcome: 'queued' };
    const censored = censorSecrets(logged);
    expect(censored).toEqual({ headers: { authorization: '[redacted]' }, outcome: 'queued' });
    expect(logged).toEqual({ headers: { authorization: 'Bearer tok' }, outcome: 'queued' });
  });

  it('hands back an object with nothing to censor as it is', () => {
    const logged = { outcome: 'completed', ms: 3, handlers: ['triage'] };
    expect(censorSecrets(logged)).toBe(logged);
  });
});

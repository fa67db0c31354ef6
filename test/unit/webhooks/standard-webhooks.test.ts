import { describe, expect, it } from 'vitest';
import {
  decodeStandardWebhookSecret,
  signStandardWebhook,
  verifyStandardWebhook,
} from '../../../src/webhooks/standard-webhooks.js';

// The published vector of the Standard Webhooks reference libraries.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const MESSAGE = {
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: '1614265330',
  body: '{"test": 2432232314}',
};
const SIGNATURE = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
const AT_SIGNING = 1614265330 * 1000;

describe('Standard Webhooks signatures', () => {
  it('signs the published vector', () => {
    expect(signStandardWebhook(MESSAGE, SECRET)).toBe(SIGNATURE);
  });

  it('verifies the published vector at its timestamp', () => {
    expect(verifyStandardWebhook(MESSAGE, SIGNATURE, [SECRET], { now: AT_SIGNING })).toEqual({
      ok: true,
      secretIndex: 0,
    });
  });

  it('accepts a header listing several signatures, any of which matches', () => {
    const header = `v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v1a,abc ${SIGNATURE}`;
    expect(verifyStandardWebhook(MESSAGE, header, [SECRET], { now: AT_SIGNING }).ok).toBe(true);
  });

  it('refuses a timestamp older than the tolerance', () => {
    const now = AT_SIGNING + 301_000;
    expect(verifyStandardWebhook(MESSAGE, SIGNATURE, [SECRET], { now })).toEqual({
      ok: false,
      reason: 'stale',
    });
  });

  it('refuses a timestamp further in the future than the tolerance', () => {
    const now = AT_SIGNING - 301_000;
    expect(verifyStandardWebhook(MESSAGE, SIGNATURE, [SECRET], { now })).toEqual({
      ok: false,
      reason: 'future',
    });
  });

  it('accepts a timestamp just inside the tolerance either way', () => {
    for (const now of [AT_SIGNING + 300_000, AT_SIGNING - 300_000]) {
      expect(verifyStandardWebhook(MESSAGE, SIGNATURE, [SECRET], { now }).ok).toBe(true);
    }
  });

  it('refuses a signature over another id', () => {
    const check = verifyStandardWebhook({ ...MESSAGE, id: 'msg_other' }, SIGNATURE, [SECRET], {
      now: AT_SIGNING,
    });
    expect(check).toEqual({ ok: false, reason: 'mismatch' });
  });

  it.each(['', 'v1', 'v1,', 'v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=', 'v1,not base64!'])(
    'calls %j malformed',
    (header) => {
      expect(verifyStandardWebhook(MESSAGE, header, [SECRET], { now: AT_SIGNING })).toEqual({
        ok: false,
        reason: 'malformed',
      });
    },
  );

  it('calls a timestamp that is not a number malformed', () => {
    const check = verifyStandardWebhook({ ...MESSAGE, timestamp: '16142e5' }, SIGNATURE, [SECRET]);
    expect(check).toEqual({ ok: false, reason: 'malformed' });
  });

  it('says which of several secrets matched', () => {
    const newer = 'whsec_' + Buffer.from('a newer secret').toString('base64');
    const check = verifyStandardWebhook(MESSAGE, SIGNATURE, [newer, SECRET], { now: AT_SIGNING });
    expect(check).toEqual({ ok: true, secretIndex: 1 });
  });

  it('decodes only secrets of the form whsec_<base64>', () => {
    expect(decodeStandardWebhookSecret(SECRET)?.length).toBe(24);
    expect(decodeStandardWebhookSecret('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBeUndefined();
    expect(decodeStandardWebhookSecret('whsec_')).toBeUndefined();
    expect(decodeStandardWebhookSecret('whsec_not*base64')).toBeUndefined();
  });
});

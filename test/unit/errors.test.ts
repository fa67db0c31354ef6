import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, problem, problemType } from '../../src/errors.js';

const docs = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

describe('the error code registry', () => {
  it('is documented code for code, with the same status', () => {
    const documented = [...docs.matchAll(/^\|\s*`([A-Z_]+)`\s*\|\s*(\d{3})\s*\|/gm)].map(
      ([, code, status]) => [code, Number(status)],
    );
    const registered = Object.entries(ERROR_CODES).map(([code, { status }]) => [code, status]);
    expect(documented).toEqual(registered);
  });

  it('builds RFC 9457 problems with a stable type', () => {
    expect(problem('SIGNATURE_INVALID', 'No.')).toEqual({
      type: 'urn:feedback-receiver:error:signature-invalid',
      title: 'Signature invalid',
      status: 401,
      detail: 'No.',
      code: 'SIGNATURE_INVALID',
    });
    expect(docs).toContain(problemType('SIGNATURE_INVALID'));
  });
});

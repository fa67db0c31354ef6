/** Why a signature was refused. Logged, never sent back: the answer is one 401 for all of them. */
export type SignatureFailure = 'malformed' | 'mismatch' | 'stale' | 'future';

/**
 * The outcome of checking one delivery's signature. On success, `secretIndex` is the position
 * of the accepted secret that matched, so an operator can tell when an old one can be retired.
 */
export type SignatureCheck =
  | { readonly ok: true; readonly secretIndex: number }
  | { readonly ok: false; readonly reason: SignatureFailure };

export const signatureMismatch: SignatureCheck = Object.freeze({ ok: false, reason: 'mismatch' });
export const signatureMalformed: SignatureCheck = Object.freeze({ ok: false, reason: 'malformed' });

/**
 * How a person reads which secret matched, in logs, metrics and the console alike: numbered from
 * 1 in the order of WEBHOOK_SECRET (#1 is the first, the newest by convention).
 */
export function secretNumber(secretIndex: number): number {
  return secretIndex + 1;
}

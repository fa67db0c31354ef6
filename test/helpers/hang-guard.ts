/**
 * Whether `promise` settles before a generous bound: a guard against a hang, far above anything
 * the code under test waits for, that times nothing. The timer goes once it has settled.
 */
export async function settlesBefore(promise: Promise<unknown>, boundMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<false>(
    (resolve) => (timer = setTimeout(() => resolve(false), boundMs)),
  );
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      bound,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

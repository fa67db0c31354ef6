/** "1 run", "3 runs", "2 deliveries": a count with its noun, in the form the count asks for. */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

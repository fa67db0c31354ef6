/** cluster-key-slot (ioredis's own) ships no types: the slot of a key, hash tags included. */
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string): number;
}

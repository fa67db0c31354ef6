/**
 * The paired worker bench's baseline as a process of its own: a bare BullMQ Worker with a no-op
 * processor on the `bare` queue. Arguments: Redis URL, key prefix, concurrency. Prints `ready`
 * once it takes jobs; stops on SIGTERM.
 */
import { Worker } from 'bullmq';

const [redisUrl = '', prefix = '', concurrency = '1'] = process.argv.slice(2);
const worker = new Worker('bare', async () => undefined, {
  connection: { url: redisUrl, maxRetriesPerRequest: null },
  prefix,
  concurrency: Number(concurrency),
});
await worker.waitUntilReady();
process.stdout.write('ready\n');
process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));

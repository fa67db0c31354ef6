/**
 * Replicated Redis for the high-availability scenarios, every node a real `redis-server` on
 * 127.0.0.1 with its own directory: a primary with replicas, the same watched by three
 * sentinels, or a cluster of three primaries with one replica each. Each node can be killed,
 * stopped and started again on its port and directory, as an operator or a crash would.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { expect, vi } from 'vitest';
import type { RedisConnection } from '../../src/queue/redis.js';
import { freePort } from './free-port.js';

const run = promisify(execFile);

/** What a scenario's processes and the suite's own reads connect to. */
export interface RedisUnderTest {
  /** REDIS_URL for `serve` and `work`. */
  readonly url: string;
  /** A client for the suite's own reads; fails fast while no primary answers. */
  connect(): RedisConnection;
  stop(): Promise<void>;
}

export interface RedisNode {
  readonly port: number;
  readonly address: string;
  /** SIGKILL: the node dies as in a crash, keeping only what its append-only file has. */
  kill(): Promise<void>;
  /** Starts it again on its port and directory, with the arguments it first had. */
  start(): Promise<void>;
  /** SIGSTOP: it keeps its sockets and answers nothing. */
  pause(): void;
  resume(): void;
  /** A short-lived client to this node alone. */
  client(): Redis;
}

interface NodeOptions {
  readonly dir: string;
  readonly args: readonly string[];
  readonly sentinel?: boolean;
}

async function startNode({ dir, args, sentinel = false }: NodeOptions): Promise<RedisNode> {
  const port = await freePort();
  const nodeDir = join(dir, String(port));
  await mkdir(nodeDir, { recursive: true });
  let child: ChildProcess | undefined;

  async function start(): Promise<void> {
    if (sentinel) {
      // A sentinel rewrites its config file as it learns the set, so each gets its own.
      const config = join(nodeDir, 'sentinel.conf');
      await writeFile(
        config,
        [`port ${port}`, 'bind 127.0.0.1', `dir ${nodeDir}`, ...args].join('\n'),
        {
          flag: 'wx',
        },
      ).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
      child = spawn('redis-server', [config, '--sentinel'], { stdio: 'ignore' });
    } else {
      child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--dir', nodeDir, '--save', '', ...args],
        { stdio: 'ignore' },
      );
    }
    await vi.waitFor(
      async () => {
        const probe = new Redis(port, '127.0.0.1', {
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
          lazyConnect: true,
        });
        probe.on('error', () => {});
        try {
          await probe.connect();
          expect(await probe.ping(), `redis-server on ${port}`).toBe('PONG');
        } finally {
          probe.disconnect();
        }
      },
      { timeout: 10_000, interval: 50 },
    );
  }

  await start();
  return {
    port,
    address: `127.0.0.1:${port}`,
    async kill() {
      // A node that a signal ended has a signalCode and no exitCode.
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited;
    },
    start,
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    client: () => {
      const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
      client.on('error', () => {});
      return client;
    },
  };
}

/** Every write is on disk before Redis answers, so a killed node keeps what it acknowledged. */
const DURABLE = ['--appendonly', 'yes', '--appendfsync', 'always'];

export interface ReplicatedRedis extends RedisUnderTest {
  readonly primary: RedisNode;
  readonly replica: RedisNode;
}

/** A primary and one replica of it; REDIS_URL names the primary. */
export async function startPrimaryWithReplica(): Promise<ReplicatedRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'redis-replicated-'));
  const primary = await startNode({ dir, args: DURABLE });
  const replica = await startNode({
    dir,
    args: [...DURABLE, '--replicaof', '127.0.0.1', String(primary.port)],
  });
  await waitForReplicas(primary, 1);
  const url = `redis://127.0.0.1:${primary.port}`;
  return {
    url,
    primary,
    replica,
    connect: () => failFast(new Redis(url, FAIL_FAST)),
    stop: () => stopAll(dir, [replica, primary]),
  };
}

export interface SentinelRedis extends ReplicatedRedis {
  readonly sentinels: readonly RedisNode[];
  readonly masterName: string;
  /** The address the sentinels give for the primary now. */
  currentPrimary(): Promise<string>;
}

/**
 * A primary, one replica and three sentinels (quorum 2) that fail over one second after the
 * primary stops answering. REDIS_URL is the `redis+sentinel://` form.
 */
export async function startSentinelRedis(): Promise<SentinelRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'redis-sentinel-'));
  const masterName = 'feedback';
  const primary = await startNode({ dir, args: DURABLE });
  const replica = await startNode({
    dir,
    args: [...DURABLE, '--replicaof', '127.0.0.1', String(primary.port)],
  });
  await waitForReplicas(primary, 1);
  const sentinels: RedisNode[] = [];
  for (let n = 0; n < 3; n += 1) {
    sentinels.push(
      await startNode({
        dir,
        sentinel: true,
        args: [
          `sentinel monitor ${masterName} 127.0.0.1 ${primary.port} 2`,
          `sentinel down-after-milliseconds ${masterName} 1000`,
          `sentinel failover-timeout ${masterName} 5000`,
          `sentinel parallel-syncs ${masterName} 1`,
        ],
      }),
    );
  }
  const url = `redis+sentinel://${sentinels.map((node) => node.address).join(',')}/${masterName}`;
  const sentinelOptions = {
    sentinels: sentinels.map((node) => ({ host: '127.0.0.1', port: node.port })),
    name: masterName,
  };
  // Every sentinel knows the replica and the other sentinels before the scenario starts.
  await vi.waitFor(
    async () => {
      for (const node of sentinels) {
        const client = node.client();
        try {
          const [master] = (await client.call('SENTINEL', 'MASTERS')) as string[][];
          const fields = Object.fromEntries(pairs(master ?? []));
          expect(fields['num-slaves'], 'replicas a sentinel knows').toBe('1');
          expect(fields['num-other-sentinels'], 'sentinels a sentinel knows').toBe('2');
        } finally {
          client.disconnect();
        }
      }
    },
    { timeout: 20_000, interval: 200 },
  );
  return {
    url,
    masterName,
    primary,
    replica,
    sentinels,
    connect: () => failFast(new Redis({ ...sentinelOptions, ...FAIL_FAST })),
    async currentPrimary() {
      const client = sentinels[0]!.client();
      try {
        const [host, port] = (await client.call(
          'SENTINEL',
          'GET-MASTER-ADDR-BY-NAME',
          masterName,
        )) as string[];
        return `${host}:${port}`;
      } finally {
        client.disconnect();
      }
    },
    stop: () => stopAll(dir, [...sentinels, replica, primary]),
  };
}

export interface ClusterRedis extends RedisUnderTest {
  readonly nodes: readonly RedisNode[];
}

/** Three primaries with one replica each, made by `redis-cli --cluster create`. */
export async function startClusterRedis(): Promise<ClusterRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'redis-cluster-'));
  const nodes: RedisNode[] = [];
  for (let n = 0; n < 6; n += 1) {
    nodes.push(
      await startNode({
        dir,
        args: [...DURABLE, '--cluster-enabled', 'yes', '--cluster-node-timeout', '2000'],
      }),
    );
  }
  await run('redis-cli', [
    '--cluster',
    'create',
    ...nodes.map((node) => node.address),
    '--cluster-replicas',
    '1',
    '--cluster-yes',
  ]);
  await vi.waitFor(
    async () => {
      for (const node of nodes) {
        const client = node.client();
        try {
          const info = await client.cluster('INFO');
          expect(info, `cluster state seen by ${node.address}`).toContain('cluster_state:ok');
        } finally {
          client.disconnect();
        }
      }
    },
    { timeout: 20_000, interval: 200 },
  );
  const url = `redis+cluster://${nodes
    .slice(0, 3)
    .map((node) => node.address)
    .join(',')}`;
  return {
    url,
    nodes,
    connect: () =>
      failFast(
        new Cluster(
          nodes.slice(0, 3).map((node) => ({ host: '127.0.0.1', port: node.port })),
          { redisOptions: { maxRetriesPerRequest: 1 } },
        ),
      ),
    stop: () => stopAll(dir, nodes),
  };
}

const FAIL_FAST = { maxRetriesPerRequest: 1 };

function failFast<T extends RedisConnection>(client: T): T {
  client.on('error', () => {}); // outages are the point here; the suite polls through them
  return client;
}

async function waitForReplicas(primary: RedisNode, count: number): Promise<void> {
  await vi.waitFor(
    async () => {
      const client = primary.client();
      try {
        const info = await client.info('replication');
        expect(info, 'replicas in sync').toContain(`connected_slaves:${count}`);
        expect(info).toMatch(/slave0:.*state=online/);
      } finally {
        client.disconnect();
      }
    },
    { timeout: 20_000, interval: 100 },
  );
}

async function stopAll(dir: string, nodes: readonly RedisNode[]): Promise<void> {
  for (const node of nodes) await node.kill();
  await rm(dir, { recursive: true, force: true });
}

function pairs(flat: readonly string[]): [string, string][] {
  const result: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) result.push([flat[i]!, flat[i + 1]!]);
  return result;
}

/**
 * REDIS_URL, read once: a single Redis (`redis://`, `rediss://`, passed to ioredis as it is), a
 * primary found through Sentinel (`redis+sentinel://`), or a cluster-mode Redis
 * (`redis+cluster://`). A `rediss` scheme means TLS to the data nodes.
 */

export type RedisTarget = SingleRedis | SentinelRedis | ClusterRedis;

export interface SingleRedis {
  readonly kind: 'single';
  readonly url: string;
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** Credentials and TLS for the data nodes (the primary and its replicas, or the cluster's nodes). */
interface DataNodeAccess {
  readonly username: string | undefined;
  readonly password: string | undefined;
  readonly tls: boolean;
}

export interface SentinelRedis extends DataNodeAccess {
  readonly kind: 'sentinel';
  readonly sentinels: readonly HostPort[];
  /** The master group name the sentinels monitor. */
  readonly masterName: string;
  /** From `?sentinel_password=` (and `sentinel_username`), when the sentinels ask for one. */
  readonly sentinelUsername: string | undefined;
  readonly sentinelPassword: string | undefined;
}

export interface ClusterRedis extends DataNodeAccess {
  readonly kind: 'cluster';
  /** Where to start; the client learns the rest of the cluster from them. */
  readonly nodes: readonly HostPort[];
}

/** REDIS_URL is not one this service can use; the message never contains the password. */
export class RedisUrlError extends Error {
  override readonly name = 'RedisUrlError';
}

const DEFAULT_PORT = { sentinel: 26379, cluster: 6379 } as const;

// The userinfo runs to the last `@` before the hosts, as WHATWG URL (and so ioredis, for a single
// Redis) reads it: a password may hold an `@` of its own.
const MULTI_HOST =
  /^(rediss?)\+(sentinel|cluster):\/\/(?:([^/?#]*)@)?([^@/?#]+)(\/[^?#]*)?(\?[^#]*)?$/;

/**
 * @throws {RedisUrlError} saying what is wrong, without echoing the URL (it may hold a password).
 * @example
 * parseRedisUrl('redis+sentinel://:s3cret@10.0.0.1:26379,10.0.0.2:26379/mymaster')
 */
export function parseRedisUrl(text: string): RedisTarget {
  if (/^rediss?:\/\/\S+$/.test(text)) {
    // ioredis reads the path's leading digits as the database, and sends SELECT NaN for none:
    // a refusal that surfaces as an uncaught error, after the receiver has started.
    const path = /^rediss?:\/\/[^/?#]*(\/[^?#]*)?/.exec(text)?.[1] ?? '';
    if (!/^(\/\d*)?$/.test(path)) {
      throw new RedisUrlError(
        'expected a database number after host:port, or nothing: redis://host:6379/0',
      );
    }
    // ioredis reads it with WHATWG URL, whose bare "Invalid URL" (a port past 65535, a host it
    // cannot read) came after the config was taken, naming no variable.
    const url = URL.canParse(text) ? new URL(text) : undefined;
    if (url === undefined || url.hostname === '' || url.port === '0') {
      throw new RedisUrlError(
        'expected host:port after the scheme, a port from 1 to 65535: redis://host:6379',
      );
    }
    return { kind: 'single', url: text };
  }
  const match = MULTI_HOST.exec(text);
  if (!match) {
    throw new RedisUrlError(
      'expected redis://, rediss://, redis+sentinel://host:port[,host:port...]/<master name> or redis+cluster://host:port[,host:port...]',
    );
  }
  const [, scheme, kind, userinfo, hostList, path, query] = match as unknown as [
    string,
    'redis' | 'rediss',
    'sentinel' | 'cluster',
    string | undefined,
    string,
    string | undefined,
    string | undefined,
  ];
  const hosts = hostList.split(',').map((entry) => hostPort(entry, DEFAULT_PORT[kind]));
  const access = { ...credentials(userinfo), tls: scheme === 'rediss' };
  const params = new URLSearchParams(query ?? '');
  if (kind === 'cluster') {
    if (path !== undefined && path !== '/') {
      throw new RedisUrlError(
        'a cluster-mode Redis has no database or path: remove it from the URL',
      );
    }
    return { kind, nodes: hosts, ...access };
  }
  const masterName = decode(path?.slice(1) ?? '');
  if (masterName === '' || masterName.includes('/')) {
    throw new RedisUrlError(
      'expected the master name after the sentinels: redis+sentinel://host:port/<master name>',
    );
  }
  return {
    kind,
    sentinels: hosts,
    masterName,
    ...access,
    sentinelUsername: params.get('sentinel_username') ?? undefined,
    sentinelPassword: params.get('sentinel_password') ?? undefined,
  };
}

/**
 * The URL as it may appear in a log line or an error message: any password replaced by `***`.
 * The password runs to the last `@` before the path (WHATWG URL, which ioredis parses with, reads
 * `redis://user:p@ss@host` so), and ioredis also takes `?password=` as an option; every query
 * parameter named like a password is hidden, `sentinel_password` among them.
 */
export function redactRedisUrl(text: string): string {
  return text
    .replace(/^([a-z+]+:\/\/[^:@/]*:)[^/]*@/i, '$1***@')
    .replace(/([?&][^=&#]*password[^=&#]*=)[^&#]*/gi, '$1***');
}

function hostPort(entry: string, defaultPort: number): HostPort {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+)(?::(\d{1,5}))?$/.exec(entry);
  const port = match?.[2] === undefined ? defaultPort : Number(match[2]);
  if (!match || port < 1 || port > 65535) {
    throw new RedisUrlError(`expected host:port, got "${entry}"`);
  }
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}

function credentials(userinfo: string | undefined) {
  if (userinfo === undefined || userinfo === '')
    return { username: undefined, password: undefined };
  const colon = userinfo.indexOf(':');
  // `user@host` is a user without a password, as ioredis reads a single Redis URL.
  if (colon === -1) return { username: decode(userinfo), password: undefined };
  const username = decode(userinfo.slice(0, colon));
  return {
    username: username === '' ? undefined : username,
    password: decode(userinfo.slice(colon + 1)),
  };
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new RedisUrlError('the URL holds a malformed percent-encoding');
  }
}

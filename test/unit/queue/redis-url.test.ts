import { describe, expect, it } from 'vitest';
import { parseRedisUrl, redactRedisUrl, RedisUrlError } from '../../../src/queue/redis-url.js';

describe('parseRedisUrl', () => {
  it('passes a single Redis URL through as it is', () => {
    expect(parseRedisUrl('rediss://user:pw@redis.example.com:6380/2')).toEqual({
      kind: 'single',
      url: 'rediss://user:pw@redis.example.com:6380/2',
    });
  });

  it('takes a single Redis URL with a database number, or with none', () => {
    for (const url of ['redis://h:6379', 'redis://h:6379/', 'redis://h/15', 'redis://h:1/0?x=y']) {
      expect(parseRedisUrl(url)).toEqual({ kind: 'single', url });
    }
  });

  it('reads sentinels, the master name, credentials and TLS', () => {
    expect(
      parseRedisUrl(
        'rediss+sentinel://app:p%40ss@10.0.0.1:26379,10.0.0.2,[::1]:26380/my-primary?sentinel_password=sp',
      ),
    ).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '10.0.0.2', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      masterName: 'my-primary',
      username: 'app',
      password: 'p@ss',
      tls: true,
      sentinelUsername: undefined,
      sentinelPassword: 'sp',
    });
  });

  it('reads cluster nodes, with 6379 as the default port and a password alone', () => {
    expect(parseRedisUrl('redis+cluster://:secret@node-a:7000,node-b')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'node-a', port: 7000 },
        { host: 'node-b', port: 6379 },
      ],
      username: undefined,
      password: 'secret',
      tls: false,
    });
  });

  it('reads a password with an @ in it to the last @, as WHATWG URL reads a single Redis URL', () => {
    expect(parseRedisUrl('redis+cluster://u:top@secret@node-a:7000')).toEqual({
      kind: 'cluster',
      nodes: [{ host: 'node-a', port: 7000 }],
      username: 'u',
      password: 'top@secret',
      tls: false,
    });
    expect(parseRedisUrl('redis+sentinel://:p@ss@10.0.0.1/m')).toMatchObject({
      sentinels: [{ host: '10.0.0.1', port: 26379 }],
      password: 'p@ss',
    });
  });

  it.each([
    ['http://127.0.0.1:6379', /expected redis:\/\//],
    ['redis+sentinel://10.0.0.1:26379', /master name/],
    ['redis+sentinel://10.0.0.1:26379/', /master name/],
    ['redis+cluster://10.0.0.1:7000/3', /no database/],
    ['redis+cluster://10.0.0.1:0', /host:port/],
    ['redis+cluster://10.0.0.1:7000,,10.0.0.2:7000', /host:port/],
    ['redis+sentinel://:%E0%A4%A@10.0.0.1/m', /percent-encoding/],
    ['redis://127.0.0.1:6379/abc', /database number/],
    ['redis://:pw@127.0.0.1:6379/1abc', /database number/],
    ['rediss://127.0.0.1:6379/0/1', /database number/],
    // WHATWG URL, which ioredis reads it with, cannot: a bare "Invalid URL" after start.
    ['redis://127.0.0.1:99999', /host:port after the scheme, a port from 1 to 65535/],
    ['redis://127.0.0.1:0', /host:port after the scheme/],
    ['redis://:pw@/0', /host:port after the scheme/],
    ['redis://a^b:6379', /host:port after the scheme/],
  ])('refuses %s', (url, message) => {
    expect(() => parseRedisUrl(url)).toThrow(RedisUrlError);
    expect(() => parseRedisUrl(url)).toThrow(message);
  });

  it('never puts the password in its message', () => {
    for (const url of ['redis+sentinel://:hunter2@h:1', 'redis+cluster://u:hunter2@h:0']) {
      try {
        parseRedisUrl(url);
        expect.unreachable(url);
      } catch (error) {
        expect((error as Error).message).not.toContain('hunter2');
      }
    }
  });
});

describe('redactRedisUrl', () => {
  it('hides passwords in the userinfo and in sentinel_password', () => {
    expect(redactRedisUrl('redis://user:hunter2@h:6379')).toBe('redis://user:***@h:6379');
    expect(redactRedisUrl('redis+sentinel://:hunter2@a:1,b:2/m?sentinel_password=x2')).toBe(
      'redis+sentinel://:***@a:1,b:2/m?sentinel_password=***',
    );
    expect(redactRedisUrl('redis://h:6379')).toBe('redis://h:6379');
  });

  it('hides a password with an @ in it, whole', () => {
    expect(redactRedisUrl('redis://user:top@secret@h:6379/0')).toBe('redis://user:***@h:6379/0');
    expect(redactRedisUrl('redis+sentinel://:p@ss@a:1,b:2/m')).toBe(
      'redis+sentinel://:***@a:1,b:2/m',
    );
  });

  it('hides a password given as a query parameter, which ioredis takes as an option', () => {
    expect(redactRedisUrl('redis://h:6379/0?password=hunter2&family=6')).toBe(
      'redis://h:6379/0?password=***&family=6',
    );
    expect(redactRedisUrl('redis://h:6379?db=1&sentinelPassword=x2')).toBe(
      'redis://h:6379?db=1&sentinelPassword=***',
    );
  });
});

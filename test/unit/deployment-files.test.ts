/**
 * No Docker engine runs here, so the deployment files are checked against the code: they name
 * only commands and variables that exist, and .env.example documents every variable there is.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENVIRONMENT_VARIABLES, loadReceiverConfig, loadWorkerConfig } from '../../src/config.js';
import { CLI } from '../helpers/cli-process.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const dockerfile = read('Dockerfile');
const compose = read('docker-compose.yml');
const envExample = read('.env.example');

const COMMANDS = ['serve', 'work', 'start', 'healthcheck'];

const documented = [...envExample.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map(([, name]) => name!);

describe('deployment files', () => {
  it('.env.example documents every variable the code reads, and no other', () => {
    expect([...documented].sort()).toEqual([...ENVIRONMENT_VARIABLES].sort());
  });

  it(".env.example's values are the defaults, and the code accepts them", () => {
    const filled = Object.fromEntries(
      [...envExample.matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map(([, name, value]) => [
        name,
        value,
      ]),
    );
    expect(() => loadReceiverConfig({ ...filled, WEBHOOK_SECRET: 'x' })).not.toThrow();
    expect(() => loadWorkerConfig(filled)).not.toThrow();
    expect(loadWorkerConfig(filled)).toEqual(loadWorkerConfig({}));
  });

  it('compose and the Dockerfile set only variables that exist', () => {
    const set = [
      ...compose.matchAll(/^\s+([A-Z][A-Z0-9_]*):/gm),
      ...dockerfile.matchAll(/^ENV ([A-Z][A-Z0-9_]*)=/gm),
    ].map(([, name]) => name!);
    expect(set.length).toBeGreaterThan(0);
    for (const name of set) expect([...ENVIRONMENT_VARIABLES, 'NODE_ENV']).toContain(name);
  });

  it('name only commands the CLI has', () => {
    const used = [
      ...compose.matchAll(/command: \['(\w+)'\]/g),
      ...dockerfile.matchAll(/"dist\/cli\/main\.js", "(\w+)"/g),
      ...dockerfile.matchAll(/^CMD \["(\w+)"\]/gm),
    ].map(([, command]) => command!);
    expect(new Set(used)).toEqual(new Set(['serve', 'work', 'healthcheck']));
    // Each is registered: the built CLI knows it (an unknown command exits 2 with usage).
    for (const command of COMMANDS) {
      const help = execFileSync(process.execPath, [CLI, command, '--help'], { encoding: 'utf8' });
      expect(help).toMatch(new RegExp(`^Usage: feedback-receiver ${command}\\b`));
    }
  });

  it('the image runs as a non-root user and has a health check', () => {
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK /m);
  });

  it('builds and runs on Node 24 in both stages, and pins Redis and Jaeger, never latest', () => {
    const stages = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map(([, image]) => image!);
    expect(stages).toEqual(['node:24-slim', 'node:24-slim']);
    const images = [...compose.matchAll(/^\s+image: (\S+)$/gm)].map(([, image]) => image!);
    const pulled = images.filter((image) => !image.startsWith('feedback-receiver:'));
    // Redis to a major version; Jaeger (the tracing profile) to a release.
    expect(pulled).toEqual(['redis:8-alpine', 'jaegertracing/jaeger:2.13.0']);
  });

  it("compose's tracing profile adds Jaeger and points both services at it, unless .env names another endpoint", () => {
    const endpoint =
      'OTEL_EXPORTER_OTLP_ENDPOINT: ${OTEL_EXPORTER_OTLP_ENDPOINT:-${COMPOSE_PROFILES:+http://jaeger:4318}}';
    expect(compose.split(endpoint)).toHaveLength(3); // the receiver and the worker
    expect(compose).toMatch(/jaeger:\n\s+image: \S+\n\s+profiles: \['tracing'\]/);
  });

  it('compose gives Redis persistence (fsync on every write), noeviction, a volume and a health check the others wait for', () => {
    const command = compose.replace(/\s+/g, ' ');
    expect(command).toContain("'--appendonly', 'yes'");
    expect(command).toContain("'--appendfsync', 'always'");
    expect(command).toContain("'--maxmemory-policy', 'noeviction'");
    expect(compose).toContain('redis-data:/data');
    expect(compose.match(/condition: service_healthy/g)).toHaveLength(2);
    expect(compose.match(/env_file: \.env/g)).toHaveLength(2);
  });
});

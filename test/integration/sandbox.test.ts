import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createSandboxApp } from '../../src/sandbox/app.js';
import { createDeliverer } from '../../src/sandbox/deliverer.js';
import { DEFAULT_SEED, SANDBOX_STARTUP_TOKEN, SANDBOX_TOKEN } from '../../src/sandbox/seed.js';
import { SandboxState } from '../../src/sandbox/state.js';

const logger = createLogger({ level: 'silent' });
let app: ReturnType<typeof createSandboxApp>;

function sandboxApp(limit = 100) {
  return createSandboxApp({
    state: new SandboxState(structuredClone(DEFAULT_SEED)),
    deliverer: createDeliverer({ logger }),
    logger,
    rateLimit: { limit, windowMs: 60_000 },
  });
}

beforeEach(() => {
  app = sandboxApp();
});

const auth = (token = SANDBOX_TOKEN) => ({ Authorization: `Bearer ${token}` });

describe('the sandbox', () => {
  it('answers 401 without a valid token, with an errors body', async () => {
    const response = await request(app).get('/v1/me');
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ errors: [expect.stringMatching(/Unauthorized/)] });
    await request(app).get('/v1/me').set(auth('nope')).expect(401);
  });

  it('answers 403 to a token whose account is not on the Company or Enterprise plan', async () => {
    const response = await request(app).get('/v1/me').set(auth(SANDBOX_STARTUP_TOKEN));
    expect(response.status).toBe(403);
    expect(response.body.errors[0]).toMatch(/Company and Enterprise plans/);
  });

  it('says who the token belongs to', async () => {
    const response = await request(app).get('/v1/me').set(auth()).expect(200);
    expect(response.body).toEqual({
      id: 'usr_dana',
      name: 'Dana Müller',
      email: 'dana@example.com',
      plan: 'company',
    });
  });

  it('changes only the fields sent, moves updated_at, and renames from the ids', async () => {
    const response = await request(app)
      .patch('/v1/feedback/fb_seed_1')
      .set(auth())
      .send({ status_id: 2, priority_id: 4, assignee_id: 'usr_account_team' })
      .expect(200);
    expect(response.body).toMatchObject({
      id: 'fb_seed_1',
      title: 'Search is slow',
      status_id: 2,
      status: 'In progress',
      priority_id: 4,
      priority: 'Critical',
      type: 'Idea',
      assignee: { id: 'usr_account_team', name: 'Account team' },
    });
    expect(Date.parse(response.body.updated_at)).toBeGreaterThan(
      Date.parse('2026-11-20T09:00:00.000Z'),
    );
  });

  it('answers 404 for an unknown record, 400 for a body that is not JSON, 422 for a bad one', async () => {
    await request(app).patch('/v1/feedback/fb_nope').set(auth()).send({ status_id: 2 }).expect(404);
    await request(app)
      .patch('/v1/feedback/fb_seed_1')
      .set(auth())
      .set('Content-Type', 'application/json')
      .send('{"status_id": ')
      .expect(400);
    for (const body of [
      { status_id: 'open' },
      { status_id: 99 },
      { priority: 'High' },
      { assignee_id: 'usr_stranger' },
    ]) {
      const response = await request(app).patch('/v1/feedback/fb_seed_1').set(auth()).send(body);
      expect(response.status).toBe(422);
      expect(response.body.errors).toHaveLength(1);
    }
  });

  it('creates a hook, checking event and target_url, and never returns the secret', async () => {
    const response = await request(app)
      .post('/v1/projects/prj_shop/hooks')
      .set(auth())
      .send({
        event: 'feedback.created',
        target_url: 'https://hooks.example.com/in',
        secret: 's3cret',
      })
      .expect(201);
    expect(Object.keys(response.body).sort()).toEqual([
      'active',
      'created_at',
      'event',
      'id',
      'target_url',
    ]);
    expect(response.body.active).toBe(true);
    expect(response.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(JSON.stringify(response.body)).not.toContain('s3cret');

    await request(app)
      .post('/v1/projects/prj_shop/hooks')
      .set(auth())
      .send({ event: 'feedback.eaten', target_url: 'https://a.example' })
      .expect(422);
    await request(app)
      .post('/v1/projects/prj_shop/hooks')
      .set(auth())
      .send({ event: 'feedback.created', target_url: 'http://a.example' })
      .expect(422);
    await request(app)
      .post('/v1/projects/prj_shop/hooks')
      .set(auth())
      .send({ event: 'feedback.created' })
      .expect(422);
    await request(app)
      .post('/v1/projects/prj_nope/hooks')
      .set(auth())
      .send({ event: 'feedback.created', target_url: 'https://a.example' })
      .expect(404);
  });

  it('answers 409 to a second hook for the same event and URL', async () => {
    const hook = { event: 'feedback.created', target_url: 'https://hooks.example.com/twice' };
    await request(app).post('/v1/projects/prj_shop/hooks').set(auth()).send(hook).expect(201);
    const response = await request(app)
      .post('/v1/projects/prj_shop/hooks')
      .set(auth())
      .send(hook)
      .expect(409);
    expect(response.body.errors[0]).toMatch(/already exists/);
  });

  it('answers 429 with Retry-After beyond the limit per token', async () => {
    app = sandboxApp(5);
    for (let i = 0; i < 5; i += 1) await request(app).get('/v1/me').set(auth()).expect(200);
    const limited = await request(app).get('/v1/me').set(auth());
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.body.errors[0]).toMatch(/Too many requests/);
  });

  it('creates a record through its own route and reads it back', async () => {
    const created = await request(app)
      .post('/sandbox/projects/prj_shop/feedback')
      .send({ title: 'Hi', type_id: 2 })
      .expect(201);
    expect(created.body).toMatchObject({
      project_id: 'prj_shop',
      title: 'Hi',
      type: 'Idea',
      status: 'New',
    });
    const read = await request(app).get(`/sandbox/feedback/${created.body.id}`).expect(200);
    expect(read.body).toEqual(created.body);
  });
});

/**
 * The sandbox's HTTP API: the three endpoints of the spec under `/v1`, behind Bearer auth, the
 * plan check and a per-token rate limit, with error bodies `{"errors": [...]}`; and routes of its
 * own under `/sandbox` to create records (which delivers them to the hooks) and read them back.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Deliverer } from './deliverer.js';
import { API_PLANS, type SandboxUser } from './seed.js';
import { isKnownId, type SandboxHook, type SandboxState } from './state.js';

export interface SandboxRateLimit {
  /** Requests per window and token. Default: 100. */
  readonly limit: number;
  /** Default: 60 000. */
  readonly windowMs: number;
}

export interface SandboxAppDeps {
  readonly state: SandboxState;
  readonly deliverer: Deliverer;
  readonly logger: Logger;
  readonly rateLimit?: SandboxRateLimit;
}

const FEEDBACK_EVENTS = ['feedback.created'];

const PatchSchema = z.strictObject({
  status_id: z
    .number()
    .int()
    .refine((id) => isKnownId('status', id), 'unknown status_id')
    .optional(),
  priority_id: z
    .number()
    .int()
    .refine((id) => isKnownId('priority', id), 'unknown priority_id')
    .optional(),
  type_id: z
    .number()
    .int()
    .refine((id) => isKnownId('type', id), 'unknown type_id')
    .optional(),
  assignee_id: z.string().min(1).optional(),
  title: z.string().min(1).optional(),
  description: z.string().optional(),
});

const HookSchema = z.strictObject({
  event: z.string().refine((event) => FEEDBACK_EVENTS.includes(event), 'unknown event kind'),
  target_url: z.url({ protocol: /^https?$/ }).refine(httpsOrLoopback, 'target_url must be HTTPS'),
  secret: z.string().min(1).optional(),
});

function httpsOrLoopback(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  return protocol === 'https:' || ['127.0.0.1', 'localhost', '[::1]'].includes(hostname);
}

declare module 'express-serve-static-core' {
  interface Request {
    sandboxUser?: SandboxUser;
  }
}

export function createSandboxApp({ state, deliverer, logger, rateLimit }: SandboxAppDeps) {
  const { limit, windowMs } = rateLimit ?? { limit: 100, windowMs: 60_000 };
  const calls = new Map<string, number[]>();
  const app = express();
  app.disable('x-powered-by');

  const fail = (res: Response, status: number, ...errors: string[]) => {
    res.status(status).json({ errors });
  };

  const authenticate = (req: Request, res: Response, next: NextFunction) => {
    const match = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    const user = match ? state.userByToken(match[1]!) : undefined;
    if (!user) return fail(res, 401, 'Unauthorized: a valid API token is required');
    if (!(API_PLANS as readonly string[]).includes(user.plan)) {
      return fail(res, 403, 'Forbidden: the API is available on the Company and Enterprise plans');
    }
    const now = Date.now();
    const recent = (calls.get(user.token!) ?? []).filter((at) => at > now - windowMs);
    if (recent.length >= limit) {
      const retryAfter = Math.max(1, Math.ceil((recent[0]! + windowMs - now) / 1000));
      res.setHeader('Retry-After', String(retryAfter));
      return fail(res, 429, `Too many requests: ${limit} a minute`);
    }
    recent.push(now);
    calls.set(user.token!, recent);
    req.sandboxUser = user;
    next();
  };

  const api = express.Router();
  api.use(authenticate, express.json());

  api.get('/me', (req, res) => {
    const { id, name, email, plan } = req.sandboxUser!;
    res.json({ id, name, email, plan });
  });

  api.patch('/feedback/:id', (req, res) => {
    const record = state.records.get(String(req.params.id));
    if (!record || !req.sandboxUser!.projects.includes(record.project_id ?? '')) {
      return fail(res, 404, 'Not found');
    }
    const parsed = PatchSchema.safeParse(req.body);
    if (!parsed.success) return fail(res, 422, ...describe(parsed.error));
    const { assignee_id: assigneeId } = parsed.data;
    if (
      assigneeId !== undefined &&
      !state.user(assigneeId)?.projects.includes(record.project_id ?? '')
    ) {
      return fail(res, 422, `assignee_id: ${assigneeId} is not a member of the project`);
    }
    res.json(state.patch(record.id, parsed.data));
  });

  api.post('/projects/:projectId/hooks', (req, res) => {
    const projectId = String(req.params.projectId);
    if (!state.projects.has(projectId)) return fail(res, 404, 'Not found');
    if (!req.sandboxUser!.projects.includes(projectId)) {
      return fail(res, 403, 'Forbidden: no permission on this project');
    }
    const parsed = HookSchema.safeParse(req.body);
    if (!parsed.success) return fail(res, 422, ...describe(parsed.error));
    const taken = state.hooks.some(
      (hook) =>
        hook.projectId === projectId &&
        hook.active &&
        hook.event === parsed.data.event &&
        hook.targetUrl === parsed.data.target_url,
    );
    if (taken) {
      return fail(res, 409, `Conflict: a hook for ${parsed.data.event} to this URL already exists`);
    }
    const hook = state.addHook(projectId, {
      event: parsed.data.event,
      targetUrl: parsed.data.target_url,
      secret: parsed.data.secret,
    });
    res.status(201).json(publicHook(hook));
  });

  app.use('/v1', api);

  // The sandbox's own routes, for demos and tests: what a reporter and the dashboard would do.
  const own = express.Router();
  own.use(express.json());
  own.post('/projects/:projectId/feedback', (req, res) => {
    const projectId = String(req.params.projectId);
    if (!state.projects.has(projectId)) return fail(res, 404, 'Not found');
    const record = state.createRecord(projectId, (req.body ?? {}) as Record<string, unknown>);
    const hooks = state.hooks.filter(
      (hook) => hook.projectId === projectId && hook.active && hook.event === 'feedback.created',
    );
    for (const hook of hooks) void deliverer.deliver(hook, record);
    logger.info({ record: record.id, hooks: hooks.length }, 'sandbox record created');
    res.status(201).json(record);
  });
  own.get('/feedback/:id', (req, res) => {
    const record = state.records.get(String(req.params.id));
    if (!record) return fail(res, 404, 'Not found');
    res.json(record);
  });
  own.get('/deliveries', (_req, res) => {
    res.json(deliverer.attempts);
  });
  app.use('/sandbox', own);

  app.use((_req: Request, res: Response) => fail(res, 404, 'Not found'));
  app.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return fail(res, 400, 'Bad request: the body is not valid JSON');
    }
    logger.error({ error: String(error) }, 'sandbox error');
    fail(res, 500, 'Internal error');
  });
  return app;
}

function publicHook(hook: SandboxHook) {
  // Never the secret.
  return {
    id: hook.id,
    event: hook.event,
    target_url: hook.targetUrl,
    active: hook.active,
    created_at: hook.createdAt,
  };
}

function describe(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`);
}

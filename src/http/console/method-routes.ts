/**
 * GET and POST routes that remember their paths, so that another method on a path answers 405
 * with `Allow` (RFC 9110) instead of 404: the console's pages and its JSON API alike.
 */
import type { RequestHandler, Router } from 'express';
import { sendProblem } from '../send-problem.js';

export interface MethodRoutes {
  readonly get: Router['get'];
  readonly post: Router['post'];
}

export function methodRoutes(router: Router): MethodRoutes {
  const methods = new Map<string, string[]>();
  const recording = (method: 'get' | 'post') =>
    ((path: string, ...handlers: RequestHandler[]) => {
      const allowed = methods.get(path) ?? [];
      allowed.push(method.toUpperCase());
      const route = router[method](path, ...(handlers as [RequestHandler]));
      // Right after the path's first route, not after all of them: a path that a later route's
      // parameter matches too (GET /deliveries/bulk, as /deliveries/:key) would be answered by
      // it, 404. The list is shared, so a method of the path registered later is let through.
      if (!methods.has(path)) router.all(path, methodNotAllowed(path, allowed));
      methods.set(path, allowed);
      return route;
    }) as Router['get'];
  return { get: recording('get'), post: recording('post') };
}

function methodNotAllowed(path: string, allowed: readonly string[]): RequestHandler {
  return (req, res, next) => {
    if (allowed.includes(req.method === 'HEAD' ? 'GET' : req.method)) return next();
    res.setHeader('Allow', allowed.join(', '));
    sendProblem(
      res,
      'METHOD_NOT_ALLOWED',
      `${path} takes ${allowed.join(' or ')}, not ${req.method}.`,
    );
  };
}

/**
 * GET and POST routes that remember their paths, so that another method on a path answers 405
 * with `Allow` (RFC 9110) instead of 404: the console's pages and its JSON API alike.
 */
import type { RequestHandler, Router } from 'express';
import { sendProblem } from '../send-problem.js';

export interface MethodRoutes {
  readonly get: Router['get'];
  readonly post: Router['post'];
  /** Registers the 405 answers: call it after the last route. */
  readonly refuseOtherMethods: () => void;
}

export function methodRoutes(router: Router): MethodRoutes {
  const methods = new Map<string, string[]>();
  const recording = (method: 'get' | 'post') =>
    ((path: string, ...handlers: RequestHandler[]) => {
      methods.set(path, [...(methods.get(path) ?? []), method.toUpperCase()]);
      return router[method](path, ...(handlers as [RequestHandler]));
    }) as Router['get'];
  return {
    get: recording('get'),
    post: recording('post'),
    refuseOtherMethods: () => {
      for (const [path, allowed] of methods) {
        router.all(path, (req, res) => {
          res.setHeader('Allow', allowed.join(', '));
          sendProblem(
            res,
            'METHOD_NOT_ALLOWED',
            `${path} takes ${allowed.join(' or ')}, not ${req.method}.`,
          );
        });
      }
    },
  };
}

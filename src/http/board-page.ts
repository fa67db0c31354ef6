/**
 * bull-board's pages kept to this site: the console promises that nothing leaves the operator's
 * machine, and bull-board's page asks Google for its fonts. No option of bull-board's removes
 * that stylesheet link, so its own Content-Security-Policy refuses any font or style from
 * elsewhere, and its page is sent without links to other sites' stylesheets, so the browser does
 * not even try. bull-board's own fonts give way to the system's (BOARD_UI_CONFIG's theme).
 */
import type { NextFunction, Request, Response } from 'express';
import type { UIConfig } from '@bull-board/api/typings/app';
import { FAVICON_PATH, CONSOLE_PATH } from './console/pages.js';

/**
 * bull-board runs its own script and JSON; its React components set inline styles, hence
 * 'unsafe-inline' for styles (no script is inline). `<base href>` points at its own path.
 */
export const BOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
].join('; ');

const SYSTEM_FONTS = {
  'font-sans': 'system-ui, sans-serif',
  'font-mono': 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
};

/** The board as part of the console: its title, its icon, a way back, the system's fonts. */
export const BOARD_UI_CONFIG: UIConfig = {
  boardTitle: 'feedback-receiver',
  favIcon: { default: FAVICON_PATH, alternative: FAVICON_PATH },
  miscLinks: [{ text: 'Delivery console', url: CONSOLE_PATH }],
  theme: { light: SYSTEM_FONTS, dark: SYSTEM_FONTS },
};

/** A `<link>` to a stylesheet on another site (bull-board's Google fonts). */
const OUTSIDE_STYLESHEET = /<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>\s*/gi;

/** Before bull-board's router: its CSP, and its HTML page without outside stylesheets. */
export function keepBoardOnThisSite(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Content-Security-Policy', BOARD_CSP);
  if (req.method === 'GET' || req.method === 'HEAD') {
    const send = res.send.bind(res);
    res.send = (body?: unknown) => {
      // Only the page: JSON (res.json sets its type before it sends) carries job data as it is.
      const html =
        typeof body === 'string' && /^text\/html\b/.test(res.get('Content-Type') ?? 'text/html');
      return send(html ? body.replace(OUTSIDE_STYLESHEET, '') : body);
    };
  }
  next();
}

/**
 * The baselines the receiver is measured against, in the same run and on the same machine:
 * `express` is a bare Express 5 route with express.raw answering 202; `http` is node:http reading
 * the body and answering 202. Usage: node baseline-server.js express|http <port>
 */
import { createServer, type RequestListener } from 'node:http';
import express from 'express';

const [kind, port] = process.argv.slice(2);

function bareExpress(): RequestListener {
  const app = express();
  app.post(
    '/webhooks/feedback',
    express.raw({ type: 'application/json', limit: '1mb' }),
    (_req, res) => {
      res.status(202).json({ status: 'queued' });
    },
  );
  return app;
}

const bareHttp: RequestListener = (req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end('{"status":"queued"}');
  });
};

const server = createServer(kind === 'express' ? bareExpress() : bareHttp);
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));

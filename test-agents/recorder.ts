import { createServer, type IncomingHttpHeaders, request } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A pass-through HTTP proxy between a client and `target` that keeps what
 * the client sent (headers, raw body) and what it got back (status,
 * headers), so a test can compare what the client sent with what the
 * provider behind the gateway received, in the same run. Bodies go through
 * unchanged, streams included.
 */

export interface Exchange {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The request body as sent (raw text). */
  body: string;
  status?: number;
  responseHeaders?: IncomingHttpHeaders;
}

export interface Recorder {
  url: string;
  exchanges: Exchange[];
  close(): Promise<void>;
}

export async function startRecorder(target: string): Promise<Recorder> {
  const to = new URL(target);
  const exchanges: Exchange[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const exchange: Exchange = { method: req.method ?? '', url: req.url ?? '/', headers: req.headers, body: body.toString() };
      exchanges.push(exchange);
      const upstream = request(
        { host: to.hostname, port: to.port, method: req.method, path: `${to.pathname.replace(/\/$/, '')}${req.url}`, headers: { ...req.headers, host: to.host } },
        (up) => {
          exchange.status = up.statusCode;
          exchange.responseHeaders = up.headers;
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

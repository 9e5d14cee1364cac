import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { announce, closeWhenTold } from './lifecycle.ts';

/**
 * The Node floor of the gateway benchmark: node:http piping each request to
 * UPSTREAM_URL's origin through an undici Pool and the answer back, bodies
 * as streams, nothing parsed. No gateway written in Node can add less.
 * Prints {"url"} when listening.
 */
const pool = new Pool(new URL(process.env['UPSTREAM_URL']!).origin, { connections: 256 });
// Hop-by-hop headers (RFC 9110 section 7.6.1) belong to each connection, not to the message.
const endToEnd = (h: IncomingHttpHeaders | Record<string, string | string[] | undefined>) => {
  const { connection: _c, 'keep-alive': _k, 'transfer-encoding': _t, ...rest } = h;
  return rest;
};
const server = createServer((req, res) => {
  pool.stream(
    { path: req.url!, method: req.method as 'POST', headers: endToEnd(req.headers) as Record<string, string>, body: req },
    ({ statusCode, headers }) => res.writeHead(statusCode, endToEnd(headers)),
    (err) => err && res.destroy(err),
  );
});
server.listen(0, '127.0.0.1', () => announce({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
closeWhenTold(async () => {
  server.close();
  server.closeAllConnections();
  await pool.close();
});

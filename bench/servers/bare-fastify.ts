import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { announce, closeWhenTold } from './lifecycle.ts';

/**
 * Baseline for the /v1/me throughput benchmark: Fastify 5 with its defaults
 * (no logger), one route answering a constant. Prints {"url"} when listening.
 */
const app = Fastify({ logger: false });
app.get('/', async () => ({ ok: true }));
await app.listen({ host: '127.0.0.1', port: 0 });
closeWhenTold(() => app.close());
announce({ url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` });

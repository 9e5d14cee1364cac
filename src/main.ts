import { wireServices } from './dev-wiring.ts';
import { runServices } from './platform/service-entry.ts';
import { services } from './services.ts';

/**
 * `npm start`: every service listed in src/services.ts in one process, on
 * embedded defaults (SQLite under ./data, emails printed to the log), each
 * printing its URL; in development the gateway console signs in with the
 * account service's accounts (dev-wiring.ts). SIGINT/SIGTERM close them all.
 */
await runServices(services, wireServices(process.env).env);

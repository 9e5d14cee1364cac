import { closeOnSignals, exitOnConfigError, startAuth } from './auth/main.ts';

/**
 * `npm start`: every service of the platform in one process, on embedded
 * defaults (SQLite under ./data, emails printed to the log). The AI gateway
 * joins here when it exists.
 */
const auth = await startAuth().catch(exitOnConfigError);
closeOnSignals(() => auth.close());

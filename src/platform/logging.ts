import pino, { type Logger, type LoggerOptions } from 'pino';

/**
 * Paths that may carry a secret. pino replaces them with "[redacted]" before
 * a line is written, wherever a log call puts them.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.password',
  '*.token',
  '*.session_token',
  '*.apiKey',
  '*.pass',
  'password',
  'token',
];

export function loggerOptions(level: string, name: string): LoggerOptions {
  return {
    level,
    name,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
}

/**
 * The service's logger: JSON lines on stdout, except in development on a
 * terminal, where pino-pretty makes them readable. pino-pretty is loaded only
 * then (a production process never pays for it) and runs in this thread
 * (a transport would start a worker thread and its memory).
 */
export async function createLogger(options: { level: string; name: string; production: boolean }): Promise<Logger> {
  const settings = loggerOptions(options.level, options.name);
  if (options.production || !process.stdout.isTTY) return pino(settings);
  const { default: pretty } = await import('pino-pretty');
  return pino(settings, pretty({ colorize: true, sync: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' }));
}

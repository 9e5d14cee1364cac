import type { LoggerOptions } from 'pino';

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

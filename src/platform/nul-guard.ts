import type { FastifyReply, FastifyRequest } from 'fastify';
import { fieldProblem } from './errors.ts';

/**
 * PostgreSQL text cannot hold U+0000: a NUL in any parameter makes the query
 * fail ("invalid byte sequence for encoding UTF8: 0x00"), which would answer
 * a client's mistake with a 500. This preValidation hook refuses such a value
 * first, with a 400 naming the field, for the top-level fields of the query
 * string, path parameters and a JSON object body (nested values are refused
 * by the routes' schemas anyway), so SQLite and PostgreSQL answer alike.
 */
export function rejectNulCharacters(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  for (const [where, value] of [['query', request.query], ['params', request.params], ['body', request.body]] as const) {
    if (typeof value !== 'object' || value === null) continue;
    for (const [field, text] of Object.entries(value)) {
      if (typeof text === 'string' && text.includes('\u0000')) {
        done(fieldProblem('invalid_characters', field, `${where} field "${field}" must not contain NUL characters.`));
        return;
      }
    }
  }
  done();
}

/**
 * Headers as a flat list of names and values (`[name, value, name, value,
 * ...]`), the form node:http's writeHead takes as it is: the data plane
 * builds an answer's head that way (data-plane/gateway-headers.ts).
 */
export type HeaderList = string[];

/** The same headers as an object (Fastify's reply.headers, an HttpProblem's headers). */
export function headerObject(list: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i < list.length; i += 2) headers[list[i]!] = list[i + 1]!;
  return headers;
}

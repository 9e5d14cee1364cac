import type { ChatStream } from '../../src/gateway/providers/types.ts';

/** `bytes` cut at the given offsets (duplicates and order do not matter): how a stream may arrive off a socket. */
export function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets)].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let from = 0;
  for (const point of points) {
    parts.push(bytes.subarray(from, point));
    from = point;
  }
  parts.push(bytes.subarray(from));
  return parts;
}

/** Everything a stream translator writes for these upstream pieces, its end included. */
export function run(stream: ChatStream, chunks: Buffer[]): string {
  let out = '';
  for (const piece of chunks) out += stream.push(piece);
  return out + stream.end();
}

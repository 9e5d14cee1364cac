import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Behaviour, Flood } from './behaviour.ts';

/**
 * Server-sent events as both providers send them (WHATWG HTML, "Server-sent
 * events": `event:` and `data:` lines, a blank line ends an event). OpenAI
 * sends bare `data:` events; Anthropic names every event, and its SDK skips
 * events without a name.
 */
export const sseData = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
export const sseEvent = (name: string, value: unknown): string => `event: ${name}\ndata: ${JSON.stringify(value)}\n\n`;

/** One streamed answer, cut where the faults strike. */
export interface StreamPlan {
  /** Events before the first content delta (OpenAI: the role chunk; Anthropic: message_start, content_block_start, ping). */
  head: string[];
  /** One event per content delta (text or tool-call arguments). */
  deltas: string[];
  /** Events after the last delta, through the end marker ([DONE] or message_stop). */
  tail: string[];
  /** The format's mid-stream error event (for the `stream-error` fault). */
  error: string;
  /** A malformed event in the format's framing (for the `garbage` fault). */
  garbage: string;
  /** One text delta event in the format (for a flood). */
  delta: (text: string) => string;
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

/** Resolves once `data` has been handed to the socket. */
const write = (res: ServerResponse, data: string) => new Promise<void>((resolve) => res.write(data, () => resolve()));

/**
 * Sends `plan` on `res` (status and headers already written), playing the
 * stream faults of `behaviour`. With no delay and no fault, the whole stream
 * goes out in one write.
 */
export async function sendStream(res: ServerResponse, plan: StreamPlan, behaviour: Behaviour, onFlood?: (bytes: number) => void): Promise<void> {
  const { fault, chunkDelayMs } = behaviour;
  if (behaviour.flood) return sendFlood(res, plan, behaviour.flood, onFlood);
  const streamFault = fault === 'drop' || fault === 'stream-error' || fault === 'garbage' ? fault : undefined;
  if (chunkDelayMs === 0 && streamFault === undefined) {
    res.end(plan.head.join('') + plan.deltas.join('') + plan.tail.join(''));
    return;
  }
  const cut = streamFault === 'garbage' ? 1 : streamFault ? Math.min(behaviour.faultAfterChunks, plan.deltas.length) : plan.deltas.length;
  const events = [...plan.head, ...plan.deltas.slice(0, cut)];
  if (streamFault === undefined) events.push(...plan.tail);
  for (const [i, event] of events.entries()) {
    if (i > 0 && chunkDelayMs > 0) await sleep(chunkDelayMs);
    if (res.destroyed) return; // the client went away
    await write(res, event);
  }
  if (streamFault === 'drop') {
    // No terminating chunk: the client sees the connection close mid-body.
    res.socket?.destroy();
    return;
  }
  if (streamFault === 'stream-error') res.end(plan.error);
  else if (streamFault === 'garbage') res.end(plan.garbage);
  else res.end();
}

/** Resolves once `res` can take more (or is gone): a flood follows the client's pace. */
const drained = (res: ServerResponse) =>
  new Promise<void>((resolve) => {
    const go = () => {
      res.off('drain', go).off('close', go);
      resolve();
    };
    res.once('drain', go).once('close', go);
  });

/** Sends `plan`'s head, then `flood` (behaviour.ts), one reused piece at a time; `onFlood` is told each piece's length once the socket took it. */
async function sendFlood(res: ServerResponse, plan: StreamPlan, flood: Flood, onFlood?: (bytes: number) => void): Promise<void> {
  const shape = flood.shape ?? 'deltas';
  const filler = 'x'.repeat(flood.pieceBytes ?? 4096);
  const piece = shape === 'deltas' ? plan.delta(filler) : shape === 'line' ? filler : `data: ${filler}\n`;
  res.write((flood.head === false ? '' : plan.head.join('')) + (shape === 'line' ? 'data: ' : ''));
  for (let sent = 0; sent < flood.bytes; sent += piece.length) {
    if (res.destroyed) return;
    const full = !res.write(piece);
    onFlood?.(piece.length);
    if (full) await drained(res);
  }
  if (res.destroyed) return;
  const end = flood.end ?? 'done';
  if (end === 'done') res.end(shape === 'deltas' ? plan.tail.join('') : '');
  else if (end === 'cut') res.end();
  else await new Promise((resolve) => res.once('close', resolve));
}

import { once } from 'node:events';
import type { Readable } from 'node:stream';
import type { HttpProblem } from '../../../platform/errors.ts';
import type { ChatStream } from '../../providers/types.ts';
import { estimatePromptTokens } from '../../tokens.ts';
import type { Call } from '../call.ts';

/**
 * Relays one streamed answer: opens the client's stream (status and headers)
 * when the first bytes are ready to go, then writes what the translator
 * makes of each upstream chunk as it arrives, pausing while the client's
 * socket is full. Until that first write, nothing reached the client: a
 * provider error or a broken upstream then throws (as a non-streamed call
 * would), so the call can still be retried or fall back. After it, the end
 * is always explicit: [DONE] after a complete answer, an error event after a
 * provider error or a broken upstream, nothing after the client left.
 * A stream that ended without the provider's final usage (the client left,
 * the upstream broke off) is settled with what was generated until then
 * (ChatStream.settleUnfinished): the provider bills it, so budgets count it.
 */
export async function relayStream(
  call: Call,
  upstream: Readable,
  stream: ChatStream,
  toProblem: (err: unknown) => HttpProblem,
): Promise<void> {
  const out = call.response;
  // For a tenant that stores bodies and has room left: the stream's start, a little past the stored body's cap (in
  // UTF-16 units, each at least a byte), so that the usage stage's cut (stored-bodies.ts) sees that more was sent.
  const storage = call.tenant.bodies;
  const keepLimit = storage?.hasRoom ? storage.maxBytes : -1;
  const kept: string[] | undefined = keepLimit >= 0 ? [] : undefined;
  let keptBytes = 0;
  const keep = (text: string) => {
    if (kept && text && keptBytes <= keepLimit) {
      kept.push(text);
      keptBytes += text.length;
    }
  };
  let tail: string;
  try {
    for await (const chunk of upstream as AsyncIterable<Buffer>) {
      const text = stream.push(chunk);
      if (text.length === 0) continue;
      if (!call.streamOpened) {
        if (stream.error) throw stream.error;
        call.openStream();
      }
      keep(text);
      if (!out.write(text)) await once(out, 'drain', { signal: call.signal });
      // The provider's error event ended the answer: stop reading (leaving the loop destroys the body).
      if (stream.error) break;
    }
    tail = stream.end();
    if (!call.streamOpened && stream.error) throw stream.error;
  } catch (err) {
    const problem = toProblem(err);
    if (!call.streamOpened) {
      upstream.destroy();
      throw problem;
    }
    if (problem.status === 499) {
      call.status = 499;
      call.errorCode = problem.code;
      upstream.destroy();
      settleUnfinished(call, stream);
      return;
    }
    tail = stream.fail(problem);
  }
  keep(tail);
  if (kept) call.storedResponse = kept.join('');
  if (stream.error) {
    call.status = stream.error.status;
    call.errorCode = stream.error.code;
  }
  if (!call.streamOpened) call.openStream();
  if (!out.destroyed) out.end(tail);
  settleUnfinished(call, stream);
}

/** The prompt, when the provider did not count it, as budgets estimate it (linear in the request's size). */
function settleUnfinished(call: Call, stream: ChatStream): void {
  stream.settleUnfinished(() => estimatePromptTokens(call.body.messages, call.body['tools']));
}

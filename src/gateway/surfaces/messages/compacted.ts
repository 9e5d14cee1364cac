import { isObject, type JsonObject } from '../../providers/json.ts';
import { assistantMessage, type ChatOrigin, type StagesForm, TOP_SYSTEM, toolMessage } from './stages-form.ts';

/** What compaction's change to the stages form becomes in the client's Messages body. */
export interface WrittenBack {
  /** The body to send: the client's own object when nothing could be written, else a copy with `messages` replaced. */
  body: JsonObject;
  /** The stages form of `body`: the client's chat messages where unchanged (the same objects), the others read again from the blocks written. */
  messages: JsonObject[];
  /** For each of `messages`, the index of the client's chat message it comes from. */
  origin: number[];
  /** For each of `messages`, where it is in `body` (its `message` an index of `body.messages`). */
  provenance: ChatOrigin[];
}

const THINKING = new Set(['thinking', 'redacted_thinking']);

/** Whether a message holds thinking blocks: Anthropic checks their signatures, and the gateway changes no block beside them. */
export function holdsThinking(message: unknown): boolean {
  const content = isObject(message) ? message['content'] : undefined;
  return Array.isArray(content) && content.some((block) => isObject(block) && THINKING.has(block['type'] as string));
}

/**
 * Compaction's change to the stages form (`sent`, with `origin[k]` the
 * client's chat message that sent message k comes from) written into the
 * client's Messages body, exactly or not at all:
 * 1. an Anthropic message whose chat messages were all dropped is dropped
 *    whole; one dropped only in part is put back whole;
 * 2. a changed tool message replaces its tool_result's content (the block
 *    keeps tool_use_id, is_error, cache_control and every other field): a
 *    string stays a string; parts changed one for one replace their blocks'
 *    text; any other all-text content becomes text blocks, unless a block
 *    it replaces carried a breakpoint of the client's or the result holds
 *    blocks the stages form does not carry;
 * 3. a changed assistant message replaces its text blocks' text, part for
 *    part (its tool_use blocks and the rest untouched), never in a message
 *    that holds thinking or redacted_thinking blocks;
 * 4. any other change (system and user messages are never rewritten, tool
 *    calls never changed) cannot be written;
 * 5. the drops must keep every tool_use with its tool_result, and not make
 *    two turns of one role meet that were apart: otherwise every drop is
 *    undone.
 * What cannot be written is undone: the client's chat message put back, so
 * that the stages account for what is sent. Blocks and messages left alone
 * are the client's own objects. Linear in the body.
 */
export function writeBack(body: JsonObject, form: StagesForm, sent: readonly unknown[], origin: readonly number[]): WrittenBack {
  const client = form.chat.messages as JsonObject[];
  const anthropic = Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [];
  const sentAt = new Array<number>(client.length).fill(-1);
  for (let k = 0; k < origin.length; k++) sentAt[origin[k]!] = k;

  // 1. Drops, by Anthropic message: chat messages of one message are contiguous in the form.
  const dropped = new Array<boolean>(anthropic.length).fill(false);
  const restore = new Array<boolean>(client.length).fill(false);
  for (let i = 0; i < client.length; ) {
    const a = form.origin[i]!.message;
    let end = i;
    while (end < client.length && form.origin[end]!.message === a) end++;
    let gone = 0;
    for (let c = i; c < end; c++) if (sentAt[c] === -1) gone++;
    if (gone === end - i && a !== TOP_SYSTEM) dropped[a] = true;
    else if (gone > 0) for (let c = i; c < end; c++) restore[c] = true;
    i = end;
  }
  // 5. Drops that would break a pair or the turns' alternation are all undone.
  if (dropped.includes(true) && !dropsHold(anthropic, dropped)) {
    dropped.fill(false);
    restore.fill(true);
  }

  // 2-4. Changes, written block by block into copies of the messages they touch.
  const written = new Map<number, unknown[] | string>();
  const rewritten = new Array<boolean>(client.length).fill(false);
  for (let c = 0; c < client.length; c++) {
    const k = sentAt[c]!;
    if (k === -1 || restore[c] || sent[k] === client[c]) continue;
    const where = form.origin[c]!;
    if (where.message === TOP_SYSTEM) continue;
    const message = anthropic[where.message];
    if (!isObject(message)) continue;
    const before = client[c]!;
    const after = sent[k] as JsonObject;
    const content = written.get(where.message) ?? message['content'];
    const next =
      before['role'] === 'tool'
        ? writeToolResult(content, where, after['content'])
        : before['role'] === 'assistant' && !holdsThinking(message) && after['tool_calls'] === before['tool_calls']
          ? writeAssistantText(content, where, after['content'])
          : undefined;
    if (next === undefined) continue;
    written.set(where.message, next);
    rewritten[c] = true;
  }

  // The body and its stages form, in order.
  if (written.size === 0 && !dropped.includes(true)) return unchanged(body, client, form.origin);
  const messages: unknown[] = [];
  const index = new Array<number>(anthropic.length).fill(-1);
  for (let a = 0; a < anthropic.length; a++) {
    if (dropped[a]) continue;
    index[a] = messages.length;
    const content = written.get(a);
    messages.push(content === undefined ? anthropic[a] : { ...(anthropic[a] as JsonObject), content });
  }
  const out: WrittenBack = { body: { ...body, messages }, messages: [], origin: [], provenance: [] };
  for (let c = 0; c < client.length; c++) {
    const where = form.origin[c]!;
    if (where.message !== TOP_SYSTEM && dropped[where.message]) continue;
    let message = client[c]!;
    let provenance = where;
    if (rewritten[c]) {
      // Read again from what was written, so that what the stages count is what is sent.
      const a = messages[index[where.message]!] as JsonObject;
      const decoded =
        where.result >= 0 ? toolMessage((a['content'] as JsonObject[])[where.result]!, where.message, where.result) : assistantMessage(a, where.message);
      message = decoded!.message;
      provenance = decoded!.origin;
    }
    out.messages.push(message);
    out.origin.push(c);
    out.provenance.push(where.message === TOP_SYSTEM ? provenance : { ...provenance, message: index[where.message]! });
  }
  return out;
}

function unchanged(body: JsonObject, client: JsonObject[], origin: ChatOrigin[]): WrittenBack {
  return { body, messages: client, origin: client.map((_, i) => i), provenance: origin };
}

/** Every tool_use kept keeps its tool_result and the reverse, and no two kept turns of one role meet across a drop. */
function dropsHold(messages: readonly unknown[], dropped: readonly boolean[]): boolean {
  const useAt = new Map<string, number>();
  const resultAt = new Map<string, number>();
  for (let a = 0; a < messages.length; a++) {
    const content = isObject(messages[a]) ? (messages[a] as JsonObject)['content'] : undefined;
    if (!Array.isArray(content)) continue;
    for (const block of content) {
      if (!isObject(block)) continue;
      if (block['type'] === 'tool_use' && typeof block['id'] === 'string') useAt.set(block['id'], a);
      if (block['type'] === 'tool_result' && typeof block['tool_use_id'] === 'string') resultAt.set(block['tool_use_id'], a);
    }
  }
  for (const [id, a] of useAt) {
    const b = resultAt.get(id);
    if (b !== undefined && dropped[a] !== dropped[b]) return false;
  }
  let previous: unknown;
  let gap = false;
  for (let a = 0; a < messages.length; a++) {
    const role = isObject(messages[a]) ? (messages[a] as JsonObject)['role'] : undefined;
    if (role === 'system') continue;
    if (dropped[a]) {
      gap = true;
      continue;
    }
    if (gap && previous !== undefined && role === previous) return false;
    previous = role;
    gap = false;
  }
  return true;
}

/** A tool message's new content written into its tool_result block (`content`: the message's blocks); undefined: it cannot be. */
function writeToolResult(content: unknown, where: ChatOrigin, now: unknown): unknown[] | undefined {
  if (where.opaque || !Array.isArray(content)) return undefined;
  const block = content[where.result];
  if (!isObject(block)) return undefined;
  const inner = block['content'];
  let next: unknown;
  if (!Array.isArray(inner)) {
    const text = allText(now);
    if (text === undefined) return undefined;
    next = text;
  } else {
    next = onePerPart(inner, where.parts, now);
    if (next === undefined) {
      const text = allText(now);
      // A note over blocks that carried the client's breakpoint would move it: left as it was.
      if (text === undefined || inner.some((b) => isObject(b) && isObject(b['cache_control']))) return undefined;
      next = text === '' ? [] : [{ type: 'text', text }];
    }
  }
  const out = content.slice();
  out[where.result] = { ...block, content: next };
  return out;
}

/** An assistant message's new text content written into its text blocks; undefined: it cannot be. */
function writeAssistantText(content: unknown, where: ChatOrigin, now: unknown): unknown[] | string | undefined {
  if (typeof content === 'string') return typeof now === 'string' ? now : undefined;
  if (!Array.isArray(content)) return undefined;
  return onePerPart(content, where.parts, now);
}

/** Parts that map one for one onto the blocks they came from (`parts[p]`: a block index), each changed text written into a copy of its block. */
function onePerPart(blocks: unknown[], parts: readonly number[], now: unknown): unknown[] | undefined {
  if (!Array.isArray(now) || now.length !== parts.length) return undefined;
  let out: unknown[] | undefined;
  for (let p = 0; p < parts.length; p++) {
    const j = parts[p]!;
    const block = blocks[j];
    const part = now[p];
    if (j < 0 || !isObject(block) || !isObject(part)) return undefined;
    if (block['type'] !== 'text') {
      if (part['type'] === 'text') return undefined;
      continue; // an image or document: compaction changes text only
    }
    if (part['type'] !== 'text' || typeof part['text'] !== 'string') return undefined;
    if (part['text'] === block['text']) continue;
    out ??= blocks.slice();
    out[j] = { ...block, text: part['text'] };
  }
  return out ?? blocks;
}

/** The content's text when it is all text (a string or text parts), else undefined. */
function allText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  let text = '';
  for (const part of content) {
    if (!isObject(part) || part['type'] !== 'text' || typeof part['text'] !== 'string') return undefined;
    text += part['text'];
  }
  return text;
}

import { invalidBody } from '../../openai-errors.ts';
import { isObject, type JsonObject } from '../json.ts';

/**
 * OpenAI message content (a string, or an array of parts) as Anthropic
 * content blocks (Messages API reference, "content"):
 * - text parts (and an assistant's refusal parts) -> text blocks; empty
 *   text is left out, as Anthropic refuses empty text blocks;
 * - image_url with a data URL -> an image block with a base64 source;
 *   with an https URL -> an image block with a url source;
 * - file with PDF file_data -> a document block with a base64 source;
 * - a part's `cache_control` is carried over, so prompt caching set on the
 *   OpenAI side reaches Anthropic.
 * Anything else (audio, other URL schemes) is a 400 naming the part.
 */
export function contentBlocks(content: unknown, param: string): JsonObject[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw invalidBody(param, `${param} must be a string or an array of content parts.`);
  const blocks: JsonObject[] = [];
  for (let i = 0; i < content.length; i++) {
    const block = partBlock(content[i], `${param}[${i}]`);
    if (block === undefined) continue;
    const cacheControl = (content[i] as JsonObject)['cache_control'];
    if (isObject(cacheControl)) block['cache_control'] = cacheControl;
    blocks.push(block);
  }
  return blocks;
}

/** The plain text of content that may only hold text (system and developer messages). */
export function textBlocks(content: unknown, param: string): JsonObject[] {
  const blocks = contentBlocks(content, param);
  if (blocks.some((block) => block['type'] !== 'text')) throw invalidBody(param, `${param} may only contain text.`);
  return blocks;
}

function partBlock(part: unknown, param: string): JsonObject | undefined {
  if (!isObject(part)) throw invalidBody(param, `${param} must be a content part object.`);
  const type = part['type'];
  if (type === 'text' || type === 'refusal') {
    const text = part[type];
    if (typeof text !== 'string') throw invalidBody(`${param}.${type}`, `${param}.${type} must be a string.`);
    return text === '' ? undefined : { type: 'text', text };
  }
  if (type === 'image_url') return imageBlock(part['image_url'], `${param}.image_url`);
  if (type === 'file') return documentBlock(part['file'], `${param}.file`);
  throw invalidBody(`${param}.type`, `Content parts of type "${String(type)}" cannot be sent to Anthropic models.`);
}

/** `data:<media type>;base64,<data>` (RFC 2397), or undefined. */
function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const comma = url.indexOf(',');
  if (!url.startsWith('data:') || comma === -1) return undefined;
  const meta = url.slice(5, comma);
  if (!meta.endsWith(';base64')) return undefined;
  return { mediaType: meta.slice(0, -7), data: url.slice(comma + 1) };
}

function imageBlock(image: unknown, param: string): JsonObject {
  const url = typeof image === 'string' ? image : isObject(image) ? image['url'] : undefined;
  if (typeof url !== 'string') throw invalidBody(`${param}.url`, `${param}.url must be a string.`);
  const inline = parseDataUrl(url);
  if (inline !== undefined) return { type: 'image', source: { type: 'base64', media_type: inline.mediaType, data: inline.data } };
  if (url.startsWith('https://')) return { type: 'image', source: { type: 'url', url } };
  throw invalidBody(`${param}.url`, `${param}.url must be a base64 data URL or an https URL for Anthropic models.`);
}

function documentBlock(file: unknown, param: string): JsonObject {
  const data = isObject(file) ? file['file_data'] : undefined;
  const inline = typeof data === 'string' ? parseDataUrl(data) : undefined;
  if (inline === undefined || inline.mediaType !== 'application/pdf') {
    throw invalidBody(`${param}.file_data`, `${param}.file_data must be a base64 data URL of a PDF for Anthropic models.`);
  }
  return { type: 'document', source: { type: 'base64', media_type: inline.mediaType, data: inline.data } };
}

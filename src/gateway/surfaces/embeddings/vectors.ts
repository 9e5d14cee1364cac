/**
 * Vectors in the two forms of OpenAI's embeddings API: `float`, a JSON
 * array of numbers, and `base64`, the vector's little-endian float32 bytes
 * in base64 (what the OpenAI SDKs ask for by default and decode). The
 * gateway keeps and asks upstream for base64 alone: a third the size of the
 * float text, and it answers a base64 client as it is. Each conversion is
 * linear in the vector's size.
 */

/** Whether this machine's float32 byte order is little-endian (typed arrays use the machine's; every platform Node ships on but s390x). */
const LITTLE_ENDIAN = new Uint8Array(new Float32Array([1]).buffer)[3] === 0x3f;

/** A vector's float32 values from its base64 (little-endian bytes). */
export function floatsOf(base64: string): Float32Array {
  const bytes = Buffer.from(base64, 'base64');
  const count = bytes.length >>> 2;
  if (LITTLE_ENDIAN && bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, count);
  const floats = new Float32Array(count);
  for (let i = 0; i < count; i++) floats[i] = bytes.readFloatLE(i * 4);
  return floats;
}

/** float32 values as base64 of their little-endian bytes. */
export function base64Of(floats: Float32Array): string {
  if (LITTLE_ENDIAN) return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength).toString('base64');
  const bytes = Buffer.allocUnsafe(floats.length * 4);
  for (let i = 0; i < floats.length; i++) bytes.writeFloatLE(floats[i]!, i * 4);
  return bytes.toString('base64');
}

/**
 * An upstream answer's `embedding` as base64: the base64 it was asked for,
 * checked to be canonical base64 of whole float32 values (decoded and
 * encoded again, the same text: both native and linear, about ten times
 * faster here than a pattern over the text), or a float array (a server
 * that ignored `encoding_format`), narrowed to float32 as OpenAI's own
 * vectors are. Undefined for anything else (an empty vector included).
 */
export function upstreamVector(value: unknown): string | undefined {
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'base64');
    return bytes.length > 0 && bytes.length % 4 === 0 && bytes.toString('base64') === value ? value : undefined;
  }
  if (!Array.isArray(value) || value.length === 0) return undefined;
  const floats = new Float32Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const v: unknown = value[i];
    if (typeof v !== 'number') return undefined;
    floats[i] = v;
  }
  return base64Of(floats);
}

/**
 * A vector as OpenAI's float form writes it: a JSON array of the float32
 * values (each the shortest decimal that reads back as the same double,
 * as JSON.stringify writes it; built by concatenation, about twice as fast
 * here as stringifying an array of them). A value JSON cannot carry
 * (NaN, an infinity) is null, as JSON.stringify writes it.
 */
export function floatText(base64: string): string {
  const floats = floatsOf(base64);
  let text = '[';
  for (let i = 0; i < floats.length; i++) {
    const v = floats[i]!;
    text += (i === 0 ? '' : ',') + (Number.isFinite(v) ? v : 'null');
  }
  return `${text}]`;
}

/**
 * OpenAI's embeddings answer (`{object: "list", data, model, usage}`), each
 * vector in the form the client asked for, `index` its place in the
 * client's `input`, written straight into one Buffer: 64 vectors of 1536
 * dimensions are half a megabyte, and made into one string first (to be
 * measured, then encoded again on the socket) they cost the main thread
 * about 4 ms more per call here than these copies do. Every part but the
 * model's name is ASCII (base64, digits, JSON punctuation).
 */
export function answerBytes(vectors: readonly string[], encoding: 'float' | 'base64', model: string, promptTokens: number): Buffer {
  const head = '{"object":"list","data":[';
  const tail = `],"model":${JSON.stringify(model)},"usage":{"prompt_tokens":${promptTokens},"total_tokens":${promptTokens}}}`;
  const items = new Array<string>(vectors.length);
  let size = head.length + Buffer.byteLength(tail);
  for (let i = 0; i < vectors.length; i++) {
    const vector = encoding === 'base64' ? `"${vectors[i]}"` : floatText(vectors[i]!);
    items[i] = `${i === 0 ? '' : ','}{"object":"embedding","index":${i},"embedding":${vector}}`;
    size += items[i]!.length;
  }
  const bytes = Buffer.allocUnsafe(size);
  let at = bytes.write(head, 0, 'latin1');
  for (const item of items) at += bytes.write(item, at, 'latin1');
  bytes.write(tail, at, 'utf8');
  return bytes;
}

import { parseArgs } from 'node:util';
import { type Behaviour, FAULTS, type Fault } from './behaviour.ts';
import { createFakeProvider } from './server.ts';

/**
 * The fake provider as a program:
 *   node tools/fake-provider/main.ts --port 9999 --latency-ms 20
 * Prints one JSON line {"url", "port"} when listening; stops on SIGINT or
 * SIGTERM. Options: --host, --port, --latency-ms, --chunk-delay-ms,
 * --chunks, --text, --fault, --fault-after-chunks, --prompt-tokens,
 * --completion-tokens, --api-key, --record (calls kept, default 0 here),
 * --prompt-cache (simulate the providers' prompt caches), --prompt-cache-machines.
 */
const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '0' },
    'latency-ms': { type: 'string' },
    'chunk-delay-ms': { type: 'string' },
    chunks: { type: 'string' },
    text: { type: 'string' },
    fault: { type: 'string' },
    'fault-after-chunks': { type: 'string' },
    'prompt-tokens': { type: 'string' },
    'completion-tokens': { type: 'string' },
    'api-key': { type: 'string' },
    record: { type: 'string', default: '0' },
    'prompt-cache': { type: 'boolean' },
    'prompt-cache-machines': { type: 'string' },
  },
});

function whole(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`fake-provider: --${name} expects a whole number, got "${value}"\n`);
    process.exit(2);
  }
  return n;
}

const behaviour: Partial<Behaviour> = {};
const numeric = {
  latencyMs: 'latency-ms',
  chunkDelayMs: 'chunk-delay-ms',
  chunks: 'chunks',
  faultAfterChunks: 'fault-after-chunks',
  promptTokens: 'prompt-tokens',
  completionTokens: 'completion-tokens',
} as const;
for (const [key, flag] of Object.entries(numeric)) {
  const n = whole(flag, values[flag]);
  if (n !== undefined) behaviour[key as keyof typeof numeric] = n;
}
if (values.text !== undefined) behaviour.text = values.text;
if (values.fault !== undefined) {
  if (!(FAULTS as readonly string[]).includes(values.fault)) {
    process.stderr.write(`fake-provider: --fault expects one of ${FAULTS.join(', ')}\n`);
    process.exit(2);
  }
  behaviour.fault = values.fault as Fault;
}

if (values['prompt-cache'] === true) behaviour.promptCache = true;
const machines = whole('prompt-cache-machines', values['prompt-cache-machines']);

const provider = await createFakeProvider({
  host: values.host,
  port: whole('port', values.port) ?? 0,
  behaviour,
  record: whole('record', values.record) ?? 0,
  ...(machines !== undefined ? { promptCache: { machines } } : {}),
  ...(values['api-key'] !== undefined ? { apiKey: values['api-key'] } : {}),
});
process.stdout.write(`${JSON.stringify({ url: provider.url, port: provider.port })}\n`);
const stop = () => void provider.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

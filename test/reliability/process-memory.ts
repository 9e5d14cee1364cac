import type { ServiceProcess } from '../helpers/service-process.ts';

/**
 * The environment that starts a service's process (test/helpers/service-process.ts)
 * with the inspector on a loopback port the kernel picks: how a test forces
 * a full GC in it (`HeapProfiler.collectGarbage`, a mechanism V8 really
 * has) without adding code to the service. No session is attached between
 * measurements.
 */
export const INSPECTOR_ENV = { NODE_OPTIONS: '--inspect=127.0.0.1:0' };

/** A process's memory as its own /metrics reports it (prom-client's default metrics), read after a full GC. */
export interface ProcessMemory {
  /**
   * Live data: `<prefix>_nodejs_heap_space_size_used_bytes` of every V8 heap
   * space but those holding compiled code and bytecode (`code*`, `trusted*`),
   * plus `<prefix>_nodejs_external_memory_bytes` (Buffers and other memory
   * that JavaScript objects hold outside the heap). The spaces left out grow
   * while the JIT warms up and shrink when V8 flushes unused bytecode; they
   * hold no request's data.
   */
  live: number;
  /** `<prefix>_nodejs_heap_size_used_bytes`: the whole heap, code included. */
  heapUsed: number;
  /** `<prefix>_process_resident_memory_bytes`. */
  rss: number;
}

/**
 * Forces a full garbage collection in `service` (started with INSPECTOR_ENV)
 * through its inspector, twice (what the first one's finalizers release, the
 * second collects), then reads its memory from its `/metrics` at `url`;
 * `prefix` is its metrics prefix (`auth`, `gateway`).
 */
export async function memoryAfterGc(service: ServiceProcess, url: string, prefix: string): Promise<ProcessMemory> {
  const inspector = inspectorAddress(service.output());
  if (!inspector) throw new Error('the service printed no inspector address (was it started with INSPECTOR_ENV?)');
  return memoryAfterGcAt(inspector, url, prefix);
}

/** The inspector's WebSocket address a process started with INSPECTOR_ENV prints on stderr, if `output` holds it. */
export function inspectorAddress(output: string): string | undefined {
  return /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1];
}

/** memoryAfterGc for a process known by its inspector's address (the soak's processes: bench/soak/service-process.ts). */
export async function memoryAfterGcAt(inspector: string, url: string, prefix: string): Promise<ProcessMemory> {
  await devtools(inspector, ['HeapProfiler.collectGarbage', 'HeapProfiler.collectGarbage']);
  return parseMemory(await (await fetch(`${url}/metrics`)).text(), prefix);
}

/** The memory gauges of a Prometheus text exposition. */
function parseMemory(text: string, prefix: string): ProcessMemory {
  const gauge = (name: string) => {
    const value = Number(new RegExp(`^${prefix}_${name} (\\S+)$`, 'm').exec(text)?.[1]);
    if (!Number.isFinite(value)) throw new Error(`/metrics has no ${prefix}_${name}`);
    return value;
  };
  let data = 0;
  for (const [, space, bytes] of text.matchAll(new RegExp(`^${prefix}_nodejs_heap_space_size_used_bytes\\{space="(\\w+)"\\} (\\S+)$`, 'gm'))) {
    if (!/^(code|trusted|shared_trusted)/.test(space!)) data += Number(bytes);
  }
  if (data === 0) throw new Error(`/metrics has no ${prefix}_nodejs_heap_space_size_used_bytes`);
  return { live: data + gauge('nodejs_external_memory_bytes'), heapUsed: gauge('nodejs_heap_size_used_bytes'), rss: gauge('process_resident_memory_bytes') };
}

/** Calls Chrome DevTools Protocol methods in order over one inspector session (Node's global WebSocket), then closes it. */
async function devtools(wsUrl: string, methods: string[]): Promise<void> {
  const socket = new WebSocket(wsUrl);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true });
    socket.addEventListener('error', () => reject(new Error(`inspector ${wsUrl} refused the connection`)), { once: true });
  });
  try {
    for (const [id, method] of methods.entries()) {
      const answered = new Promise<void>((resolve, reject) => {
        const onMessage = (event: MessageEvent) => {
          const message = JSON.parse(String(event.data)) as { id?: number; error?: { message: string } };
          if (message.id !== id) return;
          socket.removeEventListener('message', onMessage);
          if (message.error) reject(new Error(`${method}: ${message.error.message}`));
          else resolve();
        };
        socket.addEventListener('message', onMessage);
      });
      socket.send(JSON.stringify({ id, method }));
      await answered;
    }
  } finally {
    socket.close();
  }
}

import { readFileSync } from 'node:fs';

/**
 * Where a process's resident memory is, mapping by mapping, from
 * /proc/PID/smaps: read beside each forced-GC reading of the soak, so that
 * RSS growth with live memory level (native memory) can be told apart:
 * - `[heap]`: the brk heap, glibc's main malloc arena (native allocations
 *   of the main thread: SQLite's page cache and statements, node's own);
 * - `malloc arena`: an anonymous mapping starting on a 64 MiB boundary,
 *   where glibc puts the malloc arenas of threads other than the main one
 *   (worker threads, libuv's pool): native allocations made there;
 * - `anonymous`: other private anonymous mappings: V8's heap pages, the
 *   in-memory cache ring, large malloc blocks (mmapped alone);
 * - `file: NAME`: mapped files by name (the node binary, shared
 *   libraries, SQLite's -shm index);
 * - `[stack]` and the kernel's other named regions as named.
 */
export interface MappedMemory {
  /** KiB resident per category. */
  byKind: Record<string, number>;
  /** Each mapping's resident KiB, by its start address and name: growth between two readings is found by key. */
  mappings: Record<string, number>;
}

/** glibc's HEAP_MAX_SIZE on 64-bit: a thread's arena is a mapping of this size, aligned to it. */
const ARENA_ALIGN = 64n * 1024n * 1024n;
const HEADER = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/;

/** Reads /proc/PID/smaps (an empty reading off Linux or once the process is gone). */
export function mappedMemory(pid: number): MappedMemory {
  let text = '';
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return { byKind: {}, mappings: {} };
  }
  const byKind: Record<string, number> = {};
  const mappings: Record<string, number> = {};
  let key = '';
  let kind = '';
  for (const line of text.split('\n')) {
    const header = HEADER.exec(line);
    if (header) {
      const name = header[3]!.trim();
      kind = name === '' ? (BigInt(`0x${header[1]}`) % ARENA_ALIGN === 0n ? 'malloc arena' : 'anonymous') : name.startsWith('[') ? name.replace(/:.*$/, ']') : `file: ${name.slice(name.lastIndexOf('/') + 1)}`;
      key = `${header[1]} ${name || '(anonymous)'}`;
      continue;
    }
    if (!line.startsWith('Rss:')) continue;
    const kib = Number(/(\d+) kB/.exec(line)?.[1] ?? 0);
    byKind[kind] = (byKind[kind] ?? 0) + kib;
    if (kib > 0) mappings[key] = kib;
  }
  return { byKind, mappings };
}

/** What grew between two readings: each kind's change, and the mappings that grew most (a new one counts whole), in KiB. */
export function mappedGrowth(warm: MappedMemory, end: MappedMemory, top = 6): { byKind: Record<string, number>; mappings: [string, number][] } {
  const byKind: Record<string, number> = {};
  for (const kind of new Set([...Object.keys(warm.byKind), ...Object.keys(end.byKind)])) {
    const change = (end.byKind[kind] ?? 0) - (warm.byKind[kind] ?? 0);
    if (change !== 0) byKind[kind] = change;
  }
  const mappings = Object.entries(end.mappings)
    .map(([key, kib]): [string, number] => [key, kib - (warm.mappings[key] ?? 0)])
    .filter(([, change]) => change > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, top);
  return { byKind, mappings };
}

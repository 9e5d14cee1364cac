import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

/** A TCP proxy to `target` (a redis:// URL) that waits `delayMs` before connecting each client. */
export async function slowProxy(target: string, delayMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.pause();
    const timer = setTimeout(() => {
      const conn = connect(Number(upstream.port || 6379), upstream.hostname, () => client.resume());
      sockets.add(conn);
      client.pipe(conn).pipe(client);
      conn.on('error', () => client.destroy());
      conn.on('close', () => client.destroy());
    }, delayMs);
    client.on('error', () => {});
    client.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

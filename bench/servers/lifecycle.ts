/**
 * What both benchmark servers share: announce themselves to the parent with one
 * JSON line on stdout, and close on SIGTERM/SIGINT or when the parent goes
 * away (their stdin is a pipe from it, which ends when it exits, even killed).
 */
export function announce(info: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(info)}\n`);
}

export function closeWhenTold(close: () => Promise<void>): void {
  let closing = false;
  const shutdown = () => {
    if (closing) return;
    closing = true;
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`close failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  process.stdin.on('end', shutdown);
  process.stdin.resume();
}

import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { SMTPServer } from 'smtp-server';

export const CERT_FILE = fileURLToPath(new URL('../fixtures/smtp-cert.pem', import.meta.url));
const KEY_FILE = fileURLToPath(new URL('../fixtures/smtp-key.pem', import.meta.url));

export interface ReceivedMail {
  to: string[];
  /** True when the message came over a connection upgraded with STARTTLS. */
  secure: boolean;
  subject: string;
  text: string;
  raw: string;
}

export interface TestSmtpServer {
  port: number;
  received: ReceivedMail[];
  /** Resolves with the first message (now or later) that matches. */
  waitFor(match: (m: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  /** Makes the server refuse every message with a 4xx (a temporary outage). */
  failing: boolean;
  close(): Promise<void>;
}

/**
 * A real SMTP server (npm smtp-server) on a free loopback port, offering
 * STARTTLS with the self-signed certificate in test/fixtures. With
 * `starttls: false` it offers no TLS at all.
 */
export async function startSmtpServer(options: { starttls?: boolean; port?: number; delayMs?: number } = {}): Promise<TestSmtpServer> {
  const received: ReceivedMail[] = [];
  const waiters: { match: (m: ReceivedMail) => boolean; resolve: (m: ReceivedMail) => void }[] = [];
  const state = { failing: false };
  const server = new SMTPServer({
    secure: false,
    key: readFileSync(KEY_FILE),
    cert: readFileSync(CERT_FILE),
    hideSTARTTLS: options.starttls === false,
    disabledCommands: options.starttls === false ? ['STARTTLS', 'AUTH'] : ['AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
        if (state.failing) {
          callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        const mail: ReceivedMail = {
          to: session.envelope.rcptTo.map((r) => r.address),
          secure: session.secure,
          subject: /^Subject: (.*)$/im.exec(raw)?.[1]?.trim() ?? '',
          text: bodyText(raw),
          raw,
        };
        received.push(mail);
        for (const w of [...waiters]) {
          if (w.match(mail)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(mail);
          }
        }
        callback();
      });
    },
  });
  // A client that goes away mid-session (a service killed, a socket reset) is the client's problem, not the server's.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    received,
    get failing() {
      return state.failing;
    },
    set failing(v: boolean) {
      state.failing = v;
    },
    waitFor(match, timeoutMs = 5000) {
      const found = received.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no matching email arrived')), timeoutMs);
        waiters.push({
          match,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The text body of a single-part message, quoted-printable decoded. */
function bodyText(raw: string): string {
  const split = raw.indexOf('\r\n\r\n');
  const headers = raw.slice(0, split);
  let body = raw.slice(split + 4);
  if (/content-transfer-encoding: quoted-printable/i.test(headers)) {
    body = Buffer.from(
      body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
      'latin1',
    ).toString('utf8');
  } else if (/content-transfer-encoding: base64/i.test(headers)) {
    body = Buffer.from(body, 'base64').toString('utf8');
  }
  return body.replace(/\r\n/g, '\n').trimEnd();
}

/** The first URL in a message's text. */
export function firstLink(mail: ReceivedMail): string {
  const m = /https?:\/\/\S+/.exec(mail.text);
  if (!m) throw new Error(`no link in email: ${mail.text}`);
  return m[0];
}

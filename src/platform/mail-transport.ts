import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';

/** Where the outbox worker hands an email. */
export interface MailTransport {
  send(message: { from: string; to: string; subject: string; text: string; html?: string }): Promise<void>;
}

export interface SmtpSettings {
  host: string;
  port: number;
  user?: string | undefined;
  pass?: string | undefined;
  /** PEM file with an extra CA to trust (a private relay, the tests' server). */
  tlsCaFile?: string | undefined;
}

/**
 * SMTP through nodemailer. On any port but 465 the connection must be
 * upgraded with STARTTLS before anything is sent (`requireTLS`); 465 is
 * implicit TLS. Certificates are always verified. nodemailer is loaded here,
 * only when SMTP is configured (it costs about 15 MB of a process's memory).
 */
export async function smtpTransport(settings: SmtpSettings): Promise<MailTransport> {
  const { default: nodemailer } = await import('nodemailer');
  const transporter = nodemailer.createTransport({
    host: settings.host,
    port: settings.port,
    secure: settings.port === 465,
    requireTLS: settings.port !== 465,
    auth: settings.user ? { user: settings.user, pass: settings.pass ?? '' } : undefined,
    tls: {
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
      ...(settings.tlsCaFile ? { ca: readFileSync(settings.tlsCaFile) } : {}),
    },
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  });
  return {
    async send(message) {
      await transporter.sendMail(message);
    },
  };
}

/** Development transport: prints the whole email to the log, links included. */
export function logTransport(log: Logger): MailTransport {
  return {
    async send(message) {
      log.info({ mail: { to: message.to, subject: message.subject } }, `email (not sent, SMTP_HOST unset):\n${message.text}`);
    },
  };
}

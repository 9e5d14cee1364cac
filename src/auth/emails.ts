import type { Email } from '../platform/mail.ts';
import type { AuthConfig } from './config.ts';

/** The link a verification email carries: AUTH_VERIFY_URL with the token, or this service's own page. */
export function verificationLink(config: AuthConfig, token: string): string {
  const encoded = encodeURIComponent(token);
  if (config.verifyUrl) return config.verifyUrl.replaceAll('{token}', encoded);
  return `${config.baseUrl}/verify?token=${encoded}`;
}

export function verificationEmail(config: AuthConfig, to: string, token: string): Email {
  const link = verificationLink(config, token);
  const hours = Math.round(config.verificationTtlMs / 3_600_000);
  return {
    kind: 'verify_email',
    to,
    subject: 'Confirm your email address',
    text: [
      'Welcome!',
      '',
      'Open this link to confirm your email address:',
      link,
      '',
      `The link works once and expires in ${hours} hours. If you did not create an account, ignore this email.`,
    ].join('\n'),
  };
}

export function newSignInEmail(to: string, at: number, ip: string, userAgent: string | undefined): Email {
  return {
    kind: 'new_sign_in',
    to,
    subject: 'New sign-in to your account',
    text: [
      'Your account was just signed in to.',
      '',
      `Time: ${new Date(at).toUTCString()}`,
      `IP address: ${ip}`,
      `Device: ${userAgent ?? 'unknown'}`,
      '',
      'If this was not you, change your password now.',
    ].join('\n'),
  };
}

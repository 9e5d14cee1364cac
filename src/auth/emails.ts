import type { Email } from '../platform/mail.ts';
import type { AuthConfig } from './config.ts';

/** A link carrying a token: a product's page (a template with `{token}`), or this service's own page at `path`. */
function tokenLink(config: AuthConfig, template: string | undefined, path: string, token: string): string {
  const encoded = encodeURIComponent(token);
  if (template) return template.replaceAll('{token}', encoded);
  return `${config.baseUrl}${path}?token=${encoded}`;
}

/** The link a verification email carries: AUTH_VERIFY_URL with the token, or this service's own page. */
export function verificationLink(config: AuthConfig, token: string): string {
  return tokenLink(config, config.verifyUrl, '/verify', token);
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

/** The link a password reset email carries: AUTH_RESET_URL with the token, or this service's own page. */
export function resetLink(config: AuthConfig, token: string): string {
  return tokenLink(config, config.resetUrl, '/reset-password', token);
}

export function passwordResetEmail(config: AuthConfig, to: string, token: string): Email {
  const minutes = Math.round(config.resetTtlMs / 60_000);
  return {
    kind: 'password_reset',
    to,
    subject: 'Reset your password',
    text: [
      'Someone (hopefully you) asked to reset the password of the account for this address.',
      '',
      'Open this link to choose a new password:',
      resetLink(config, token),
      '',
      `The link works once and expires in ${minutes} minutes; asking again replaces it.`,
      'If you did not ask, ignore this email: your password stays as it is.',
    ].join('\n'),
  };
}

/**
 * Sent instead of a verification email when the sign-up page is given an
 * address that already has an account (the page answers the same either
 * way): its owner learns of the attempt and gets a reset link, which also
 * takes back an account someone else created unverified with this address
 * (the reset revokes everything issued to it; password-reset.ts).
 */
export function signUpExistingAccountEmail(config: AuthConfig, to: string, token: string): Email {
  const minutes = Math.round(config.resetTtlMs / 60_000);
  return {
    kind: 'sign_up_existing_account',
    to,
    subject: 'You already have an account',
    text: [
      'Someone (hopefully you) tried to create an account with this address, but it already has one.',
      '',
      'If it was you, sign in with your password. If you do not remember it, open this link to choose a new one:',
      resetLink(config, token),
      '',
      `The link works once and expires in ${minutes} minutes.`,
      'If it was not you, ignore this email: nothing has changed.',
    ].join('\n'),
  };
}

/**
 * Sent after a reset or a change. It carries no link and no token: whoever
 * reads it learns only that the password changed and when.
 */
export function passwordChangedEmail(to: string, at: number, how: 'reset' | 'change'): Email {
  return {
    kind: 'password_changed',
    to,
    subject: 'Your password was changed',
    text: [
      how === 'reset'
        ? 'The password of your account was reset with a link sent to this address. Every device was signed out.'
        : 'The password of your account was changed. Every other device was signed out.',
      '',
      `Time: ${new Date(at).toUTCString()}`,
      '',
      'If this was not you, ask for a password reset at once to take your account back.',
    ].join('\n'),
  };
}

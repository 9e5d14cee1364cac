import type { Email } from '../../platform/mail.ts';
import type { GatewayConfig } from '../config.ts';

/** The link a sign-in email carries: GATEWAY_MAGIC_LINK_URL with the token, or the gateway's own page. */
export function magicLink(config: Pick<GatewayConfig, 'magicLinkUrl' | 'baseUrl'>, token: string): string {
  const encoded = encodeURIComponent(token);
  if (config.magicLinkUrl) return config.magicLinkUrl.replaceAll('{token}', encoded);
  return `${config.baseUrl}/auth/magic-link?token=${encoded}`;
}

/** What a workspace is called in an email: its name and the day it was created (UTC). */
function described(workspace: { name: string; createdAt: number }): string {
  return `"${workspace.name}" (created ${new Date(workspace.createdAt).toISOString().slice(0, 10)})`;
}

/**
 * The sign-in email. `unconfirmed`: the address is held by a workspace
 * created through the API whose address was never confirmed; following this
 * link gives a workspace of one's own and releases that one
 * (workspace-ownership.ts), which the email says before anyone clicks.
 */
export function magicLinkEmail(
  config: Pick<GatewayConfig, 'magicLinkUrl' | 'baseUrl' | 'magicLinkTtlMs'>,
  to: string,
  token: string,
  unconfirmed?: { name: string; createdAt: number },
): Email {
  const minutes = Math.round(config.magicLinkTtlMs / 60_000);
  const warning = unconfirmed
    ? [
        `This address has a workspace, ${described(unconfirmed)}, that was created through the API and whose address was never confirmed.`,
        'This link signs you in to a new workspace of your own, and that one is released: it no longer holds this address, and no sign-in reaches it again.',
        'If you created that workspace and want to keep it, do not use this link: open the confirmation link we sent when it was created.',
        '',
      ]
    : [];
  return {
    kind: 'magic_link',
    to,
    subject: 'Your sign-in link',
    text: [
      'Someone (hopefully you) asked to sign in to the AI gateway workspace of this address.',
      '',
      ...warning,
      'Open this link to sign in:',
      magicLink(config, token),
      '',
      `The link works once and expires in ${minutes} minutes. If you did not ask, ignore this email.`,
    ].join('\n'),
  };
}

/** The link of a confirmation email: always the gateway's own page (it works without a session). */
export function confirmationLink(config: Pick<GatewayConfig, 'baseUrl'>, token: string): string {
  return `${config.baseUrl}/auth/confirm-email?token=${encodeURIComponent(token)}`;
}

/**
 * Sent at an API sign-up (GATEWAY_SIGNUP=open). It says plainly not to
 * confirm a workspace one did not create: confirming it would give the
 * address to whoever did (the residual risk the account service documents
 * for its verification link).
 */
export function confirmationEmail(config: Pick<GatewayConfig, 'baseUrl' | 'confirmTtlMs'>, to: string, token: string, workspace: { name: string; createdAt: number }): Email {
  const hours = Math.round(config.confirmTtlMs / 3_600_000);
  return {
    kind: 'email_confirmation',
    to,
    subject: 'Confirm the address of your AI gateway workspace',
    text: [
      `A workspace, ${described(workspace)}, was created on the AI gateway with this address.`,
      '',
      'If you created it, confirm that this address is yours:',
      confirmationLink(config, token),
      '',
      `The link works for ${hours} hours. Until the address is confirmed, signing in by email or with your account does not reach this workspace.`,
      '',
      'If you did not create this workspace, ignore this email and do not open the link: confirming would give your address to whoever created it. You can sign in with your address at any time and get a workspace of your own.',
    ].join('\n'),
  };
}

/** Tells the address that a sign-in which proved it released an unconfirmed workspace holding it (workspace-ownership.ts). */
export function workspaceReleasedEmail(config: Pick<GatewayConfig, 'baseUrl'>, to: string, released: { name: string; createdAt: number }): Email {
  return {
    kind: 'workspace_released',
    to,
    subject: 'A workspace created with your address was released',
    text: [
      `A workspace, ${described(released)}, had been created on the AI gateway with this address through the API, and its address was never confirmed.`,
      '',
      'A sign-in just proved that this address is yours, so that workspace was released: it no longer holds your address and no sign-in reaches it.',
      'You are in a workspace of your own; nothing of the released one (its keys, settings or requests) is in it.',
      '',
      `If you did not sign in just now, sign in at ${config.baseUrl}/sign-in and look at your workspace.`,
    ].join('\n'),
  };
}

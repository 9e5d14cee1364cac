import type { Email } from '../platform/mail.ts';
import type { GatewayConfig } from './config.ts';

/** The link a sign-in email carries: GATEWAY_MAGIC_LINK_URL with the token, or the gateway's own page. */
export function magicLink(config: Pick<GatewayConfig, 'magicLinkUrl' | 'baseUrl'>, token: string): string {
  const encoded = encodeURIComponent(token);
  if (config.magicLinkUrl) return config.magicLinkUrl.replaceAll('{token}', encoded);
  return `${config.baseUrl}/auth/magic-link?token=${encoded}`;
}

export function magicLinkEmail(config: Pick<GatewayConfig, 'magicLinkUrl' | 'baseUrl' | 'magicLinkTtlMs'>, to: string, token: string): Email {
  const minutes = Math.round(config.magicLinkTtlMs / 60_000);
  return {
    kind: 'magic_link',
    to,
    subject: 'Your sign-in link',
    text: [
      'Someone (hopefully you) asked to sign in to the AI gateway workspace of this address.',
      '',
      'Open this link to sign in:',
      magicLink(config, token),
      '',
      `The link works once and expires in ${minutes} minutes. If you did not ask, ignore this email.`,
    ].join('\n'),
  };
}

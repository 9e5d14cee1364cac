import type { UpstreamPolicy } from '../../platform/safe-connect.ts';
import type { PrivateUpstreams } from '../config.ts';

/** GATEWAY_ALLOW_PRIVATE_UPSTREAMS as the platform connector's policy (the same one checks stored base URLs and every connection). */
export function upstreamPolicy(setting: PrivateUpstreams): UpstreamPolicy {
  if (setting.kind === 'all') return { allowAll: true, hosts: [], cidrs: [] };
  if (setting.kind === 'list') return { allowAll: false, hosts: setting.hosts, cidrs: setting.cidrs };
  return { allowAll: false, hosts: [], cidrs: [] };
}

/**
 * The line to log at start when the setting is unsafe for a multi-tenant
 * gateway: `true` in production lets any tenant's base_url reach the
 * gateway's own network (cloud metadata, databases, admin ports). A list
 * is a deliberate choice and is not warned about.
 */
export function privateUpstreamsWarning(config: { production: boolean; allowPrivateUpstreams: PrivateUpstreams }): string | undefined {
  if (!config.production || config.allowPrivateUpstreams.kind !== 'all') return undefined;
  return 'GATEWAY_ALLOW_PRIVATE_UPSTREAMS=true: any tenant can point a provider base_url at private and loopback addresses of this network; unsafe unless every tenant is trusted (list hosts and CIDR ranges instead)';
}

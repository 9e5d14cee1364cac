import type { UpstreamPolicy } from '../platform/safe-connect.ts';
import type { PrivateUpstreams } from './config.ts';

/** GATEWAY_ALLOW_PRIVATE_UPSTREAMS as the platform connector's policy (the same one checks stored base URLs and every connection). */
export function upstreamPolicy(setting: PrivateUpstreams): UpstreamPolicy {
  if (setting.kind === 'all') return { allowAll: true, hosts: [], cidrs: [] };
  if (setting.kind === 'list') return { allowAll: false, hosts: setting.hosts, cidrs: setting.cidrs };
  return { allowAll: false, hosts: [], cidrs: [] };
}

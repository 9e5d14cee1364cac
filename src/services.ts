import { authService } from './auth/main.ts';
import { gatewayService } from './gateway/main.ts';
import type { ServiceEntry } from './platform/service-entry.ts';

/**
 * Every service of the platform, in start order: `npm start` runs them all in
 * one process and `npm run migrate` migrates each one's database.
 */
export const services: ServiceEntry[] = [
  authService,
  gatewayService,
];

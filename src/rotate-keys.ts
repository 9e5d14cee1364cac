import { configureAll, exitOnConfigError } from './platform/service-entry.ts';
import { services } from './services.ts';

/**
 * `npm run rotate-keys`: after a new encryption key was deployed with the
 * old one kept for reading (GATEWAY_ENCRYPTION_KEY_PREVIOUS,
 * AUTH_ENCRYPTION_KEY_PREVIOUS), seals again under the new key everything
 * the old ones sealed: the gateway's provider keys and stored responses,
 * and both outboxes' email bodies. The services keep running meanwhile. Safe to run again (what
 * is current is left alone). Exits 1 when something opens with no key, naming
 * it; the old key can be dropped once a run reports nothing left to reseal.
 */
const configured = (() => {
  try {
    return configureAll(services, process.env);
  } catch (err) {
    return exitOnConfigError(err);
  }
})();
let unreadable = 0;
for (const service of configured) {
  for (const count of await service.rotateKeys()) {
    process.stdout.write(`${count.what}: ${count.resealed} resealed under the current key, ${count.current} already current, ${count.unreadable.length} unreadable\n`);
    for (const name of count.unreadable) process.stdout.write(`  opens with no key given: ${name}\n`);
    unreadable += count.unreadable.length;
  }
}
if (unreadable > 0) {
  process.stderr.write(`${unreadable} sealed value(s) open with neither the current key nor a *_ENCRYPTION_KEY_PREVIOUS one: left as they are.\n`);
  process.exit(1);
}

import type { Behaviour } from '../../tools/fake-provider/behaviour.ts';
import { createFakeProvider } from '../../tools/fake-provider/server.ts';
import { announce, closeWhenTold } from './lifecycle.ts';

/**
 * tools/fake-provider as a benchmark child process: the behaviour comes as
 * JSON in FAKE_BEHAVIOUR (e.g. {"latencyMs": 20}); no calls are recorded.
 * Prints {"url"} when listening.
 */
const behaviour = JSON.parse(process.env['FAKE_BEHAVIOUR'] ?? '{}') as Partial<Behaviour>;
const provider = await createFakeProvider({ behaviour, record: 0 });
closeWhenTold(() => provider.close());
announce({ url: provider.url });

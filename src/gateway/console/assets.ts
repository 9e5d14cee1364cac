import { readFileSync } from 'node:fs';
import { findPackageJSON } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Type } from 'typebox';
import { sha256 } from '../../platform/crypto.ts';
import type { App } from '../../platform/http.ts';

/** A file of an installed npm package, found as Node resolves the package (its package.json need not be exported). */
function fromPackage(pkg: string, file: string): string {
  const manifest = findPackageJSON(pkg, import.meta.url);
  if (!manifest) throw new Error(`npm package ${pkg} is not installed`);
  return join(dirname(manifest), file);
}

const CSS = 'text/css; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';

/**
 * Every file the console's pages may load, by public name: the console's own
 * CSS and scripts (console-charts.js only on pages with charts), and the charting library from its npm package (Chart.js's
 * self-contained UMD build, which registers `window.Chart`). Nothing else on
 * disk can be reached through the asset route, and nothing is fetched at run
 * time: the files are read once, when the gateway starts.
 */
const ALLOW_LIST = {
  'console.css': { path: join(import.meta.dirname, 'static', 'console.css'), type: CSS },
  'console.js': { path: join(import.meta.dirname, 'static', 'console.js'), type: JS },
  'console-charts.js': { path: join(import.meta.dirname, 'static', 'console-charts.js'), type: JS },
  'chart.umd.min.js': { path: fromPackage('chart.js', 'dist/chart.umd.min.js'), type: JS },
} satisfies Record<string, { path: string; type: string }>;

export type AssetName = keyof typeof ALLOW_LIST;

interface Asset {
  body: Buffer;
  gzipped: Buffer;
  type: string;
  version: string;
}

/** A year: the URL carries the content's hash, so a changed file is a new URL. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * The console's static files, loaded once. URLs are `/assets/<hash>/<name>`;
 * a request with the current hash is cached for a year (immutable), one
 * with another hash (a page from another version, during a rolling deploy)
 * still gets the file, revalidated each time.
 */
export class ConsoleAssets {
  readonly #assets = new Map<string, Asset>();

  constructor() {
    for (const [name, { path, type }] of Object.entries(ALLOW_LIST)) {
      const body = readFileSync(path);
      // Source-map comments point at files the allow-list does not serve.
      const served = type === JS ? Buffer.from(body.toString('utf8').replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n')) : body;
      this.#assets.set(name, { body: served, gzipped: gzipSync(served, { level: 9 }), type, version: sha256(served).slice(0, 12) });
    }
  }

  url(name: AssetName): string {
    const asset = this.#assets.get(name);
    if (!asset) throw new Error(`${name} is not in the console's asset allow-list`);
    return `/assets/${asset.version}/${name}`;
  }

  routes = async (app: App): Promise<void> => {
    app.get(
      '/assets/:version/:name',
      { schema: { hide: true, params: Type.Object({ version: Type.String({ maxLength: 64 }), name: Type.String({ maxLength: 64 }) }) } },
      async (request, reply) => {
        const asset = this.#assets.get(request.params.name);
        if (!asset) return reply.status(404).type('text/plain; charset=utf-8').send('Not found');
        const gzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
        reply
          .type(asset.type)
          .header('cache-control', request.params.version === asset.version ? IMMUTABLE : 'no-cache')
          .header('etag', `"${asset.version}"`)
          .header('vary', 'accept-encoding')
          .header('x-content-type-options', 'nosniff')
          .header('cross-origin-resource-policy', 'same-origin');
        if (request.headers['if-none-match'] === `"${asset.version}"`) return reply.status(304).send();
        if (gzip) reply.header('content-encoding', 'gzip');
        return reply.send(gzip ? asset.gzipped : asset.body);
      },
    );
  };
}

// Bundles bench/think-worker/src/index.ts with esbuild into dist/index.js (one ES module that
// Miniflare loads with the nodejs_compat flag). Run: node bench/think-worker/build.mjs
// (installs nothing; run `npm ci --prefix bench/think-worker` first on a fresh checkout).
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { statSync } from 'node:fs';
import { builtinModules } from 'node:module';

// Optional peers that Think's dependency graph imports statically but this agent never reaches
// (agents' skill-script runner → just-bash). Resolve them to a stub that throws if ever used.
const OPTIONAL_PEERS = ['just-bash'];
const optionalPeerStubs = {
  name: 'optional-peer-stubs',
  setup(b) {
    const filter = new RegExp(`^(${OPTIONAL_PEERS.map((n) => n.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})$`);
    b.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'optional-peer-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'optional-peer-stub' }, (args) => ({
      contents: `const fail = () => { throw new Error(${JSON.stringify(args.path)} + ' is not bundled in the bench worker'); };
export class Bash { constructor() { fail(); } }
export const defineCommand = fail;
export default {};`,
      loader: 'js',
    }));
  },
};

const here = dirname(fileURLToPath(import.meta.url));
const outfile = join(here, 'dist', 'index.js');
await build({
  entryPoints: [join(here, 'src', 'index.ts')],
  outfile,
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  conditions: ['workerd', 'worker', 'browser', 'import', 'module'],
  mainFields: ['module', 'main'],
  // Node built-ins come from workerd's nodejs_compat; bare names (`crypto`) as well as `node:*`.
  external: ['cloudflare:*', 'node:*', ...builtinModules],
  plugins: [optionalPeerStubs],
  minify: false,
  sourcemap: false,
  logLevel: 'warning',
});
console.log(`think-worker: ${outfile} (${(statSync(outfile).size / 1024).toFixed(0)} KiB)`);

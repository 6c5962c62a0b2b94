// Bundles a worker module built on @cloudflare/think (a test's coordinator or child, the benchmark's
// peer) into one ES module that workerd loads with nodejs_compat. Owns the esbuild settings those
// workers share and the stand-in for the optional peers Think's dependency graph imports statically
// but a chat agent never reaches (agents' skill-script runner → just-bash): a module that throws if
// it is ever used.
import { build } from 'esbuild';
import { builtinModules } from 'node:module';

const OPTIONAL_PEERS = ['just-bash'];

const optionalPeerStubs = {
  name: 'optional-peer-stubs',
  setup(b) {
    const filter = new RegExp(`^(${OPTIONAL_PEERS.join('|')})$`);
    b.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'optional-peer-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'optional-peer-stub' }, (args) => ({
      contents: `const fail = () => { throw new Error(${JSON.stringify(args.path)} + ' is not bundled'); };
export class Bash { constructor() { fail(); } }
export const defineCommand = fail;
export default {};`,
      loader: 'js',
    }));
  },
};

/** Bundles `entry` into `outfile`; returns `outfile`. */
export async function bundleThinkWorker(entry, outfile, { logLevel = 'warning' } = {}) {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser', 'import', 'module'],
    mainFields: ['module', 'main'],
    // Node built-ins come from workerd's nodejs_compat: bare names (`crypto`) as well as `node:*`.
    external: ['cloudflare:*', 'node:*', ...builtinModules],
    plugins: [optionalPeerStubs],
    logLevel,
  });
  return outfile;
}

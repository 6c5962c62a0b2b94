// Bundles tests/support/think-child/index.ts with the repository's esbuild into
// target/think-child/index.js (one ES module; Miniflare loads it with nodejs_compat).
// Returns the output path; `node tests/support/think-child/build.mjs` builds it by hand.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { builtinModules } from 'node:module';

const here = dirname(fileURLToPath(import.meta.url));
export const THINK_CHILD_OUT = join(here, '..', '..', '..', 'target', 'think-child', 'index.js');

// Optional peers Think's graph imports statically that this agent never reaches: a stub that
// throws if used.
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

export async function buildThinkChild() {
  await build({
    entryPoints: [join(here, 'index.ts')],
    outfile: THINK_CHILD_OUT,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser', 'import', 'module'],
    mainFields: ['module', 'main'],
    external: ['cloudflare:*', 'node:*', ...builtinModules],
    plugins: [optionalPeerStubs],
    logLevel: 'warning',
  });
  return THINK_CHILD_OUT;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await buildThinkChild());

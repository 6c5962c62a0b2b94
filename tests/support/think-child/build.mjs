// Bundles tests/support/think-child/index.ts with the repository's esbuild into
// target/think-child/index.js (one ES module; Miniflare loads it with nodejs_compat).
// Returns the output path; `node tests/support/think-child/build.mjs` builds it by hand.
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { bundleThinkWorker } from '../../../scripts/think-bundle.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const THINK_CHILD_OUT = join(here, '..', '..', '..', 'target', 'think-child', 'index.js');

export async function buildThinkChild() {
  return bundleThinkWorker(join(here, 'index.ts'), THINK_CHILD_OUT);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await buildThinkChild());

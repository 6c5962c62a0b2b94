// Bundles bench/think-worker/src/index.ts with esbuild into dist/index.js (one ES module that
// Miniflare loads with the nodejs_compat flag). Run: node bench/think-worker/build.mjs
// (installs nothing; run `npm ci --prefix bench/think-worker` first on a fresh checkout).
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { statSync } from 'node:fs';
import { bundleThinkWorker } from '../../scripts/think-bundle.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const outfile = await bundleThinkWorker(join(here, 'src', 'index.ts'), join(here, 'dist', 'index.js'));
console.log(`think-worker: ${outfile} (${(statSync(outfile).size / 1024).toFixed(0)} KiB)`);

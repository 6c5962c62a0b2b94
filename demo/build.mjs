// Bundles the demo page (demo/src, React + agents/react + agents/chat/react) with esbuild into ONE
// self-contained file, demo/dist/index.html: JS and CSS inlined, no CDN, no network at runtime.
// build.rs embeds that file into the worker (and replaces {{VERSION}} with the crate version).
// Run: node demo/build.mjs   (scripts/build.sh runs it before worker-build).

import * as esbuild from 'esbuild';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DEMO = dirname(fileURLToPath(import.meta.url));
const OUT = join(DEMO, 'dist', 'index.html');

const result = await esbuild.build({
  absWorkingDir: join(DEMO, '..'),
  entryPoints: [join(DEMO, 'src', 'main.jsx')],
  bundle: true,
  write: false,
  outdir: join(DEMO, 'dist', 'assets'), // not written: only names the .js and .css outputs
  format: 'iife',
  platform: 'browser',
  target: ['es2022', 'chrome111', 'firefox113', 'safari16.4'],
  jsx: 'automatic',
  minify: true,
  legalComments: 'none',
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
  metafile: true,
});

const js = result.outputFiles.find((f) => f.path.endsWith('.js'))?.text;
const css = result.outputFiles.find((f) => f.path.endsWith('.css'))?.text ?? '';
if (!js) throw new Error('esbuild produced no JavaScript');

// Inlined code must not close its own element early.
const inlineScript = js.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
const inlineStyle = css.replace(/<\/(style)/gi, '<\\/$1');

const template = await readFile(join(DEMO, 'index.html'), 'utf8');
for (const marker of ['/*__CSS__*/', '/*__JS__*/', '{{VERSION}}']) {
  if (!template.includes(marker)) throw new Error(`demo/index.html lacks ${marker}`);
}
// Function replacements: the bundle contains `$&`-like sequences that a string replacement would expand.
const page = template
  .replace('/*__CSS__*/', () => inlineStyle)
  .replace('/*__JS__*/', () => inlineScript);

// Written only when it changed: build.rs reruns (and cargo recompiles the crate) on a newer file.
await mkdir(dirname(OUT), { recursive: true });
const previous = await readFile(OUT, 'utf8').catch(() => null);
if (previous !== page) await writeFile(OUT, page);
const kb = (n) => `${(n / 1024).toFixed(0)} KB`;
console.log(`demo: wrote ${OUT} (${kb(Buffer.byteLength(page))}; js ${kb(js.length)}, css ${kb(css.length)})`);

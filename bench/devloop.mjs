#!/usr/bin/env node
// The developer's loop, measured: `wrangler dev` start → first frame of a new agent, and an edit of
// one source file → the reloaded worker's first agent frame, for our worker (wrangler.toml, its
// Rust build through scripts/build.sh) and the Think reference worker (bench/think-worker/
// wrangler.toml, its esbuild bundle), side by side, starts interleaved A B, B A, ….
// Each worker is started once unmeasured first, so the measured starts are on a tree already built
// once. The edit appends a comment line to the file (ours: src/demo.rs; Think: src/index.ts) while
// wrangler dev runs, and is undone the same way (two samples per start). Prints a table; asserts
// nothing about the figures.
//
//   node bench/devloop.mjs [--reps N]        (default 3; run it with Node >= 22.12, as scripts do)

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from '../tests/support/harness.mjs';
import { sleep, startWrangler } from './wrangler-dev.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const START_TIMEOUT_MS = 600000;
const RELOAD_TIMEOUT_MS = 300000;
const now = () => performance.now();

const argv = process.argv.slice(2);
const repsAt = argv.indexOf('--reps');
const REPS = repsAt >= 0 ? Number(argv[repsAt + 1]) : 3;
if (!Number.isInteger(REPS) || REPS < 1) throw new Error('--reps must be a positive integer');

const WORKERS = {
  ours: { label: 'ours (Rust, wasm)', cwd: ROOT, config: join(ROOT, 'wrangler.toml'), binding: 'ChatAgent', edit: join(ROOT, 'src', 'demo.rs'), comment: '//' },
  think: { label: 'Think (TypeScript)', cwd: join(ROOT, 'bench', 'think-worker'), config: join(ROOT, 'bench', 'think-worker', 'wrangler.toml'), binding: 'ThinkAgent', edit: join(ROOT, 'bench', 'think-worker', 'src', 'index.ts'), comment: '//' },
};

/** Connect to a fresh agent until its first frame arrives; resolves with the time it arrived. */
async function firstAgentFrame(dev, w, deadline) {
  for (let i = 0; ; i++) {
    if (!dev.alive()) throw new Error(`wrangler dev exited:\n${dev.output().slice(-3000)}`);
    if (now() > deadline) throw new Error(`no agent frame in time:\n${dev.output().slice(-3000)}`);
    try {
      const c = await connect(dev.url, w.binding, `devloop-${Date.now()}-${i}`);
      await c.waitFor(() => true, 5000);
      const at = now();
      c.ws.terminate();
      return at;
    } catch {
      await sleep(100);
    }
  }
}

/** Wait until wrangler's output has been quiet for `ms` (its file watcher's own rebuild is over). */
async function settle(dev, ms = 3000) {
  let last = dev.output().length;
  let quietSince = now();
  while (now() - quietSince < ms) {
    await sleep(200);
    if (dev.output().length !== last) { last = dev.output().length; quietSince = now(); }
  }
}

/** Change `w.edit` (append or remove a comment line) and time it to the reloaded worker's frame. */
async function editToReload(dev, w, change) {
  const before = dev.reloads();
  const t0 = now();
  change();
  const deadline = t0 + RELOAD_TIMEOUT_MS;
  while (dev.reloads() === before) {
    if (!dev.alive()) throw new Error(`wrangler dev exited:\n${dev.output().slice(-3000)}`);
    if (now() > deadline) throw new Error(`no reload after the edit:\n${dev.output().slice(-3000)}`);
    await sleep(50);
  }
  return (await firstAgentFrame(dev, w, deadline)) - t0;
}

async function runOnce(key, samples, measured) {
  const w = WORKERS[key];
  const original = readFileSync(w.edit, 'utf8');
  const t0 = now();
  const dev = await startWrangler(w);
  try {
    const first = await firstAgentFrame(dev, w, t0 + START_TIMEOUT_MS);
    if (!measured) return;
    samples[key].start.push(first - t0);
    await settle(dev);
    samples[key].edit.push(await editToReload(dev, w, () => writeFileSync(w.edit, `${original}${w.comment} devloop edit ${Date.now()}\n`)));
    await settle(dev);
    samples[key].edit.push(await editToReload(dev, w, () => writeFileSync(w.edit, original)));
    await settle(dev);
  } finally {
    writeFileSync(w.edit, original);
    await dev.stop();
  }
}

const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  if (!v.length) return NaN;
  const m = (v.length - 1) / 2;
  return (v[Math.floor(m)] + v[Math.ceil(m)]) / 2;
};
const s = (ms) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : '-');

const thinkDir = WORKERS.think.cwd;
if (!existsSync(join(thinkDir, 'node_modules', '@cloudflare', 'think'))) {
  console.error('devloop: installing bench/think-worker dependencies (npm ci) …');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: thinkDir, stdio: ['ignore', 'ignore', 'inherit'] });
}

const samples = { ours: { start: [], edit: [] }, think: { start: [], edit: [] } };
console.error('devloop: one unmeasured start of each worker (builds the tree once) …');
await runOnce('ours', samples, false);
await runOnce('think', samples, false);
for (let r = 0; r < REPS; r++) {
  const order = r % 2 === 0 ? ['ours', 'think'] : ['think', 'ours'];
  for (const key of order) {
    console.error(`devloop: rep ${r + 1}/${REPS} ${key}`);
    await runOnce(key, samples, true);
  }
}

const wranglerVersion = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'wrangler', 'package.json'), 'utf8')).version;
console.log(`wrangler ${wranglerVersion}, node ${process.version}, ${REPS} starts each (interleaved), median (min–max)`);
console.log('');
console.log('| metric | ours (Rust, wasm) | Think (TypeScript) | ours / Think |');
console.log('|---|---|---|---|');
for (const [metric, label] of [['start', '`wrangler dev` start → first agent frame'], ['edit', 'edit one source file → reloaded worker\'s first agent frame']]) {
  const cell = (xs) => `${s(median(xs))} (${s(Math.min(...xs))}–${s(Math.max(...xs))})`;
  const ratio = median(samples.ours[metric]) / median(samples.think[metric]);
  console.log(`| ${label} | ${cell(samples.ours[metric])} | ${cell(samples.think[metric])} | ${ratio.toFixed(2)}× |`);
}

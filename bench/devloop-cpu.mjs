#!/usr/bin/env node
// Where the CPU of a streamed turn goes under `wrangler dev`, per process: wrangler's node process
// and each workerd it runs (the user worker's runtime, the dev proxy), for our worker and the Think
// reference worker, side by side. One N-token turn per run (after two short warm-up turns on the
// same agent), `utime + stime` from /proc/<pid>/stat before the request and after every process's
// counter has stopped moving, ÷ tokens. Also counts the frames and bytes the tab received. Prints
// figures; asserts nothing.
//
//   node bench/devloop-cpu.mjs [--tokens N] [--runs N]   (default 1000, 1; Node >= 22.12)

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, chatRequest, userMessage, isDone } from '../tests/support/harness.mjs';
import { startModelServer } from '../tests/support/model-server.mjs';
import { sleep, startWrangler } from './wrangler-dev.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CLK_TCK = 100;

const argv = process.argv.slice(2);
const arg = (name, def) => {
  const at = argv.indexOf(`--${name}`);
  return at >= 0 ? Number(argv[at + 1]) : def;
};
const TOKENS = arg('tokens', 1000);
const RUNS = arg('runs', 1);

const WORKERS = {
  ours: { cwd: ROOT, config: join(ROOT, 'wrangler.toml'), binding: 'ChatAgent' },
  think: { cwd: join(ROOT, 'bench', 'think-worker'), config: join(ROOT, 'bench', 'think-worker', 'wrangler.toml'), binding: 'ThinkAgent' },
};

/** Every process: pid → {ppid, ticks, name}. */
function processes() {
  const out = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      out.set(Number(entry), { ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]), name: describe(cmd) });
    } catch { /* gone */ }
  }
  return out;
}

function describe(cmd) {
  const exe = (cmd[0] ?? '').split('/').at(-1);
  if (exe === 'workerd') {
    const entry = cmd.find((a) => a.startsWith('--socket-addr=entry='))?.slice('--socket-addr=entry='.length);
    return `workerd entry=${entry ?? '?'}`;
  }
  if (cmd.some((a) => a.endsWith('wrangler.js'))) return 'node (wrangler)';
  return exe + (cmd[1] ? ` ${cmd[1].split('/').at(-1)}` : '');
}

/** The process tree under `root`: pid → {ticks, name}. */
function tree(root) {
  const all = processes();
  const keep = new Map();
  const visit = (pid) => {
    const p = all.get(pid);
    if (!p) return;
    keep.set(pid, p);
    for (const [child, c] of all) if (c.ppid === pid) visit(child);
  };
  visit(root);
  return keep;
}

/** Waits until no process of the tree moved by more than a tick over 300 ms. */
async function quiet(root, maxMs = 20000) {
  const t0 = Date.now();
  let last = tree(root);
  while (Date.now() - t0 < maxMs) {
    await sleep(300);
    const next = tree(root);
    const moved = [...next].some(([pid, p]) => p.ticks - (last.get(pid)?.ticks ?? 0) > 1);
    last = next;
    if (!moved) return last;
  }
  return last;
}

async function agentTab(dev, w, room) {
  const deadline = Date.now() + 600000;
  for (;;) {
    if (!dev.alive()) throw new Error(`wrangler dev exited:\n${dev.output().slice(-3000)}`);
    if (Date.now() > deadline) throw new Error(`no agent in time:\n${dev.output().slice(-3000)}`);
    try {
      const c = await connect(dev.url, w.binding, room);
      await c.waitFor('cf_agent_mcp_servers', 10000);
      return c;
    } catch {
      await sleep(200);
    }
  }
}

async function turn(c, text) {
  const id = `r-${Math.random().toString(36).slice(2, 10)}`;
  const mark = c.mark();
  let bytes = 0;
  const count = (data) => { bytes += data.length; };
  c.ws.on('message', count);
  c.send(chatRequest(id, [userMessage(`u-${id}`, text)]));
  const done = await c.waitFor(isDone(id), 120000);
  c.ws.off('message', count);
  return { outcome: done.outcome, frames: c.since(mark).length, bytes };
}

async function measure(key, model) {
  const w = WORKERS[key];
  const dev = await startWrangler(w, ['--var', `OPENAI_BASE_URL:${model.url}`]);
  try {
    const c = await agentTab(dev, w, `cpu-${Date.now()}`);
    await turn(c, '[tokens:3] warm');
    await turn(c, '[tokens:3] prime');
    const before = await quiet(dev.pid);
    const t0 = Date.now();
    const result = await turn(c, `[tokens:${TOKENS}] measured`);
    const wall = Date.now() - t0;
    const after = await quiet(dev.pid);
    const rows = [...after].map(([pid, p]) => ({
      pid,
      name: p.name.endsWith(`:${dev.port}`) ? `${p.name} (serves --port: the dev proxy)` : p.name, ms: ((p.ticks - (before.get(pid)?.ticks ?? p.ticks)) * 1000) / CLK_TCK,
    })).filter((r) => r.ms > 0 || /wrangler|workerd/.test(r.name));
    c.ws.terminate();
    return { key, wall, ...result, rows, log: dev.output() };
  } finally {
    await dev.stop();
  }
}

if (!existsSync(join(WORKERS.think.cwd, 'node_modules', '@cloudflare', 'think'))) {
  throw new Error('bench/think-worker has no node_modules: run `npm ci` there first');
}
const model = await startModelServer();
try {
  for (let run = 0; run < RUNS; run++) {
    for (const key of run % 2 ? ['think', 'ours'] : ['ours', 'think']) {
      const r = await measure(key, model);
      console.log(`\n${key}: ${TOKENS}-token turn, outcome ${r.outcome}, ${r.wall} ms wall, ${r.frames} frames, ${r.bytes} bytes (${(r.bytes / TOKENS).toFixed(0)} B/token)`);
      for (const row of r.rows) {
        console.log(`  ${String(row.pid).padStart(7)}  ${row.name.padEnd(40)} ${row.ms.toFixed(0).padStart(6)} ms  ${(row.ms / TOKENS).toFixed(3)} ms/token`);
      }
      if (argv.includes('--show-log')) console.log(r.log.slice(-4000));
    }
  }
} finally {
  await model.close();
}

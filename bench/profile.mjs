#!/usr/bin/env node
// Where the time, writes and memory go, for ours and for Think (companion of bench/run.mjs; same
// workers, model server and client). For each worker:
//   - CPU: a V8 sampling profile (workerd inspector, Profiler domain) over K measured N-token
//     turns; prints the top functions by self time (our wasm keeps its name section, so Rust
//     functions appear by name) and writes <out>/<worker>.cpuprofile (open in Chrome DevTools).
//   - writes: the pages one N-token turn writes to the SQLite WAL, attributed to tables/indexes
//     with the sqlite3 CLI's dbstat on a copy of the database (needs `sqlite3` on PATH).
//   - memory: JS heap used (Runtime.getHeapUsage after a forced GC) and process RSS, before and
//     after M agents with H-message histories.
//
//   node bench/profile.mjs [--tokens 1000] [--turns 3] [--agents 20] [--history 50] [--out DIR]
//                          [--workers ours,think]

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { freePort, inspect } from './inspector.mjs';
import { startModelServer } from '../tests/support/model-server.mjs';
import {
  WalWatcher, drop, ensureThinkBuilt, fmt, openTab, settle, sleep, stageOurs, startInstance, turn, workerSpecs,
} from './run.mjs';

function args() {
  const a = process.argv.slice(2);
  const o = { tokens: 1000, turns: 3, agents: 20, history: 50, out: null, workers: 'ours,think' };
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '');
    if (!(k in o)) throw new Error(`unknown option ${a[i]}`);
    o[k] = k === 'out' || k === 'workers' ? a[i + 1] : Number(a[i + 1]);
  }
  return o;
}

function topSelf(profile, n = 25) {
  const byId = new Map(profile.nodes.map((x) => [x.id, x]));
  const counts = new Map();
  const dt = (profile.endTime - profile.startTime) / Math.max(1, profile.samples.length) / 1000; // ms per sample
  for (const id of profile.samples) counts.set(id, (counts.get(id) ?? 0) + 1);
  const agg = new Map();
  let total = 0;
  for (const [id, c] of counts) {
    const node = byId.get(id);
    const f = node.callFrame;
    const url = f.url ? basename(f.url) : '';
    const key = `${f.functionName || '(anonymous)'}  ${url}${url ? ':' + (f.lineNumber + 1) : ''}`;
    if (f.functionName === '(idle)' || f.functionName === '(program)') continue;
    agg.set(key, (agg.get(key) ?? 0) + c);
    total += c;
  }
  const rows = [...agg].sort((a, b) => b[1] - a[1]).slice(0, n);
  return { totalMs: total * dt, rows: rows.map(([k, c]) => ({ fn: k, ms: c * dt, pct: (100 * c) / total })) };
}

/** Pages written by one turn, attributed to tables with sqlite3's dbstat on a copy of the db. */
function attribute(walPath, pageWrites) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-db-'));
  try {
    const db = walPath.replace(/-wal$/, '');
    const copy = join(dir, 'db.sqlite');
    copyFileSync(db, copy);
    if (existsSync(walPath)) copyFileSync(walPath, copy + '-wal');
    const out = execFileSync('sqlite3', ['-readonly', copy, "SELECT pageno, name FROM dbstat;"], { encoding: 'utf8' });
    const owner = new Map(out.trim().split('\n').filter(Boolean).map((l) => { const [p, ...n] = l.split('|'); return [Number(p), n.join('|')]; }));
    const byTable = new Map();
    for (const [pgno, times] of pageWrites) {
      const name = owner.get(pgno) ?? (pgno === 1 ? 'sqlite_schema (page 1, header)' : '(freelist / new page)');
      byTable.set(name, (byTable.get(name) ?? 0) + times);
    }
    const rows = execFileSync('sqlite3', ['-readonly', copy,
      "SELECT name FROM sqlite_schema WHERE type='table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%';"], { encoding: 'utf8' })
      .trim().split('\n').filter(Boolean).map((t) => {
        let n = '?';
        try { n = execFileSync('sqlite3', ['-readonly', copy, `SELECT count(*) FROM "${t}";`], { encoding: 'utf8' }).trim(); } catch { /* */ }
        return `${t}=${n}`;
      });
    return { byTable: [...byTable].sort((a, b) => b[1] - a[1]), rows };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const o = args();
  const work = mkdtempSync(join(tmpdir(), 'durable-chat-profile-'));
  const out = o.out ?? join(work, 'profiles');
  mkdirSync(out, { recursive: true });
  const ours = stageOurs(join(work, 'ours-build'));
  const specs = workerSpecs(ours, ensureThinkBuilt());
  const model = await startModelServer();
  try {
    for (const key of o.workers.split(',')) {
      const port = await freePort();
      const inst = await startInstance(specs[key], {
        modelUrl: model.url, persistDir: join(work, `${key}-do`), preventEviction: true, miniflare: { inspectorPort: port },
      });
      try {
        console.log(`\n=== ${inst.label}`);
        const cdp = await inspect(port);
        // CPU profile of the measured turns.
        const warm = await openTab(inst, 'warm');
        await turn(warm, '[tokens:3] warm');
        await turn(warm, `[tokens:${o.tokens}] warm`);
        drop(warm);
        const c = await openTab(inst, 'prof');
        await turn(c, '[tokens:3] prime');
        await settle(inst);
        await cdp.call('Profiler.enable');
        await cdp.call('Profiler.setSamplingInterval', { interval: 100 });
        await cdp.call('Profiler.start');
        const cpu0 = inst.cpu();
        for (let i = 0; i < o.turns; i++) await turn(c, `[tokens:${o.tokens}] profile ${i}`);
        await settle(inst);
        const cpu = inst.cpu() - cpu0;
        const { profile } = await cdp.call('Profiler.stop');
        writeFileSync(join(out, `${key}.cpuprofile`), JSON.stringify(profile));
        const top = topSelf(profile);
        console.log(`CPU: ${o.turns} × ${o.tokens}-token turns: workerd ${fmt(cpu)} ms (/proc), sampled ≈ ${fmt(top.totalMs)} ms of JS/wasm (sample-count estimate; use the percentages)`);
        for (const r of top.rows) console.log(`  ${r.pct.toFixed(1).padStart(5)}%  ${fmt(r.ms).padStart(7)} ms  ${r.fn}`);

        // SQLite pages of one turn.
        const sqlName = 'sql';
        const s = await openTab(inst, sqlName);
        await turn(s, '[tokens:3] prime');
        await settle(inst);
        const w = new WalWatcher(inst.walPath(sqlName));
        w.start();
        await turn(s, `[tokens:${o.tokens}] sqlite`);
        await settle(inst);
        await sleep(200);
        const ws = w.stop();
        drop(s);
        console.log(`SQLite, one ${o.tokens}-token turn: ${ws.commits} write transactions, ${ws.frames} page writes (${fmt(ws.walBytes / 1024)} KiB WAL)`);
        try {
          const a = attribute(inst.walPath(sqlName), w.pageWrites);
          for (const [t, n] of a.byTable.slice(0, 12)) console.log(`  ${String(n).padStart(6)} page writes  ${t}`);
          console.log(`  rows after the turn: ${a.rows.join(', ')}`);
        } catch (err) {
          console.log(`  (attribution skipped: ${err.message.split('\n')[0]})`);
        }

        // Memory.
        await cdp.call('HeapProfiler.enable').catch(() => {});
        const heap = async () => {
          await cdp.call('HeapProfiler.collectGarbage', {}, 10000).catch(() => {});
          const h = await cdp.call('Runtime.getHeapUsage', {}, 10000).catch(() => null);
          return h ? h.usedSize / 1048576 : NaN;
        };
        await settle(inst);
        const h0 = await heap();
        const r0 = inst.rss() / 1024;
        const tabs = [];
        for (let a = 0; a < o.agents; a += 10) {
          const group = await Promise.all(Array.from({ length: Math.min(10, o.agents - a) }, (_, k) => openTab(inst, `mem-${a + k}`)));
          await Promise.all(group.map(async (t, k) => {
            for (let i = 0; i < Math.ceil(o.history / 2); i++) await turn(t, `[tokens:40] agent ${a + k} message ${i}`);
          }));
          tabs.push(...group);
        }
        await settle(inst);
        const h1 = await heap();
        await sleep(300);
        const r1 = inst.rss() / 1024;
        console.log(`memory: ${o.agents} agents × ${o.history} messages: JS heap ${fmt(h0)} → ${fmt(h1)} MiB (${fmt((h1 - h0) / o.agents)} MiB/agent), RSS ${fmt(r0)} → ${fmt(r1)} MiB (${fmt((r1 - r0) / o.agents)} MiB/agent; RSS includes wasm linear memory and SQLite page caches)`);
        tabs.forEach(drop);
        cdp.close();
      } finally {
        await inst.close();
      }
    }
    console.log(`\nprofiles: ${out}`);
  } finally {
    await model.close();
    if (!o.out) console.log('(temp dir kept for the .cpuprofile files: ' + work + ')');
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err?.stack || String(err));
  process.exit(1);
});

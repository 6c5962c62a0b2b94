#!/usr/bin/env node
// Where per-agent memory goes (companion of bench/run.mjs; same workers, model server, client).
// For each worker and scenario, on a fresh workerd process with eviction disabled:
//   base = after one warm agent (3 turns); after = after N more agents in the scenario's state.
// Prints per agent: VmRSS growth, its split by /proc/<pid>/smaps mapping (the wasm linear
// memory is its own large reservation, the V8 heap cage another, malloc'd C++ state — SQLite
// connections and page caches, actor objects — lands in [heap]/anonymous arenas), our wasm
// linear memory size (GET …/__debug/memory, served only by the test build — bash scripts/build.sh
// --test — with DEBUG_MEMORY=1) and, with --inspect,
// the V8 JS heap after a forced GC.
//
//   node bench/memory-probe.mjs [--agents 30] [--history 50] [--workers ours,think,floor]
//        [--scenarios empty-open,empty-closed,hist-open,hist-closed] [--stages K] [--vars K=V,…]
//        [--ours-dir DIR]
//        [--inspect]
// --stages K builds K groups of N agents and prints the marginal cost of each further group
// (the first group also pays one-off warm-up: wasm tier-up, JIT, heap and allocator growth).

import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, inspect } from './inspector.mjs';
import { startModelServer } from '../tests/support/model-server.mjs';
import {
  drop, ensureThinkBuilt, fmt, median, openTab, settle, sleep, stageOurs, startInstance, turn, workerSpecs,
} from './run.mjs';

function args() {
  const a = process.argv.slice(2);
  const o = { 'ours-dir': '', vars: '', stages: 1, agents: 30, history: 50, workers: 'ours,think', scenarios: 'empty-open,empty-closed,hist-open,hist-closed', inspect: false };
  for (let i = 0; i < a.length; i++) {
    const k = a[i].replace(/^--/, '');
    if (k === 'inspect') { o.inspect = true; continue; }
    if (!(k in o)) throw new Error(`unknown option ${a[i]}`);
    o[k] = typeof o[k] === 'number' ? Number(a[++i]) : a[++i];
  }
  return o;
}

/** Rss (KiB) per mapping of pid: [{key, name, sizeKiB, rssKiB}]. */
function smaps(pid) {
  const out = [];
  let cur = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+)\s+(\S+)\s+\S+\s+\S+\s+\S+\s*(.*)$/.exec(line);
    if (head) {
      cur = { key: head[1], perms: head[3], name: head[4] || '[anon]', sizeKiB: Number((BigInt(`0x${head[2]}`) - BigInt(`0x${head[1]}`)) / 1024n), rssKiB: 0 };
      out.push(cur);
    } else if (cur && line.startsWith('Rss:')) {
      cur.rssKiB = Number(/(\d+)/.exec(line)[1]);
    }
  }
  return out;
}

/** Group a mapping: the wasm memory and V8 cage are multi-GiB reservations. */
function classOf(m) {
  if (m.name !== '[anon]') return m.name.startsWith('/') ? 'file-backed' : m.name;
  if (m.sizeKiB >= 6 * 1024 * 1024) return 'anon ≥6 GiB reservation (wasm memory + guards)';
  if (m.sizeKiB >= 1024 * 1024) return 'anon 1–6 GiB reservation (V8 cage / code range)';
  if (m.sizeKiB >= 60 * 1024) return 'anon 60 MiB–1 GiB (malloc arenas, V8 spaces)';
  return 'anon < 60 MiB';
}

function byClass(maps) {
  const r = {};
  for (const m of maps) r[classOf(m)] = (r[classOf(m)] ?? 0) + m.rssKiB;
  return r;
}

/** The heap-snapshot groups that grew most between two `objects()` results, per agent. */
function objectGrowth(before, after, agents, top = 20) {
  const rows = [];
  for (const [k, a] of after) {
    const b = before.get(k) ?? { bytes: 0, count: 0 };
    rows.push({ k, bytes: a.bytes - b.bytes, count: a.count - b.count });
  }
  return rows.sort((x, y) => y.bytes - x.bytes).slice(0, top)
    .map((r) => `    ${fmt(r.bytes / 1024 / agents).padStart(8)} KiB/agent  ${fmt(r.count / agents).padStart(7)} objects/agent  ${r.k}`);
}

/** Bytes on disk of the Durable Objects' SQLite files (db, WAL, shm) under persistDir. */
function diskBytes(dir) {
  const r = { db: 0, wal: 0, shm: 0, files: 0 };
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.sqlite')) { r.db += statSync(p).size; r.files++; }
      else if (e.name.endsWith('.sqlite-wal')) r.wal += statSync(p).size;
      else if (e.name.endsWith('.sqlite-shm')) r.shm += statSync(p).size;
    }
  };
  walk(dir);
  return r;
}

async function debugMemory(inst, name) {
  if (inst.key !== 'ours') return null;
  const r = await fetch(`${inst.url}/agents/chat-agent/${name}/__debug/memory`);
  return r.ok ? r.json() : null;
}

async function snapshot(inst, cdp, warmName) {
  await settle(inst, 3000);
  await sleep(500);
  let heap = null;
  let rssBeforeGcKiB = NaN;
  if (cdp) {
    rssBeforeGcKiB = inst.rss();
    heap = { pre: await cdp.heap() };
    await cdp.gc();
    await sleep(300);
    heap.post = await cdp.heap();
    heap.objects = await cdp.objects();
  }
  const rss = [];
  for (let i = 0; i < 5; i++) { rss.push(inst.rss()); await sleep(100); }
  const maps = smaps(inst.pids[0]);
  return {
    rssKiB: median(rss),
    maps,
    classes: byClass(maps),
    wasm: await debugMemory(inst, warmName),
    heap,
    rssBeforeGcKiB,
  };
}

async function buildAgents(inst, o, scenario, stage = 0) {
  const [content, socket] = scenario.split('-');
  const turns = content === 'hist' ? Math.ceil(o.history / 2) : 0;
  const tabs = [];
  for (let a = 0; a < o.agents; a += 10) {
    const group = await Promise.all(Array.from({ length: Math.min(10, o.agents - a) }, (_, k) => openTab(inst, `${scenario}-${stage ? `s${stage}-` : ''}${a + k}`)));
    await Promise.all(group.map(async (c, k) => {
      for (let i = 0; i < turns; i++) await turn(c, `[tokens:40] agent ${a + k} message ${i}`);
    }));
    if (socket === 'closed') group.forEach(drop); else tabs.push(...group);
  }
  return tabs;
}

async function main() {
  const o = args();
  const work = mkdtempSync(join(tmpdir(), 'durable-chat-memprobe-'));
  // --ours-dir DIR: a saved index.js + index_bg.wasm instead of build/ (A/B of two builds).
  const ours = o['ours-dir'] ? { dir: o['ours-dir'] } : stageOurs(join(work, 'ours-build'));
  const specs = workerSpecs(ours, o.workers.includes('think') ? ensureThinkBuilt() : '');
  const model = await startModelServer();
  const bindings = { OPENAI_API_KEY: 'bench-key', MODEL: 'scripted-model', MESSAGE_CONCURRENCY: 'queue', DEBUG_MEMORY: '1', RATE_LIMIT_PER_CONNECTION: '0', RATE_LIMIT_PER_AGENT: '0' };
  for (const kv of o.vars.split(',').filter(Boolean)) { const [k, v] = kv.split('='); bindings[k] = v; }
  try {
    for (const key of o.workers.split(',')) {
      for (const scenario of o.scenarios.split(',')) {
        const port = o.inspect ? await freePort() : undefined;
        const inst = await startInstance(specs[key], {
          modelUrl: model.url, persistDir: join(work, `${key}-${scenario}`), preventEviction: true,
          miniflare: { bindings: { ...bindings, OPENAI_BASE_URL: model.url }, ...(o.inspect ? { inspectorPort: port } : {}) },
        });
        let tabs = [];
        try {
          const cdp = o.inspect ? await inspect(port) : null;
          const warm = await openTab(inst, 'warm');
          for (let i = 0; i < 3; i++) await turn(warm, `[tokens:40] warm ${i}`);
          const before = await snapshot(inst, cdp, 'warm');
          tabs = await buildAgents(inst, o, scenario);
          const after = await snapshot(inst, cdp, 'warm');
          let prevStage = after;
          for (let stage = 1; stage < o.stages; stage++) {
            tabs.push(...await buildAgents(inst, o, scenario, stage));
            const next = await snapshot(inst, cdp, 'warm');
            const wasm = next.wasm ? `, wasm memory +${fmt((next.wasm.wasmMemoryBytes - prevStage.wasm.wasmMemoryBytes) / 1024 / o.agents)} KiB/agent` : '';
            const heap = cdp ? `, JS heap used +${fmt((next.heap.post.used - prevStage.heap.post.used) * 1024 / o.agents)} KiB/agent, committed +${fmt((next.heap.post.total - prevStage.heap.post.total) * 1024 / o.agents)}` : '';
            const cls = Object.entries(next.classes).map(([c, v]) => [c, v - (prevStage.classes[c] ?? 0)]).filter(([, d]) => Math.abs(d) >= o.agents * 4)
              .map(([c, d]) => `${c.split(' (')[0]} ${fmt(d / o.agents)}`).join('; ');
            console.log(`  stage ${stage + 1} (${o.agents} more agents): RSS ${fmt(prevStage.rssKiB / 1024)} → ${fmt(next.rssKiB / 1024)} MiB = marginal ${fmt((next.rssKiB - prevStage.rssKiB) / o.agents)} KiB/agent${wasm}${heap} [${cls}]`);
            prevStage = next;
          }
          tabs.push(warm);
          const per = (kib) => fmt(kib / 1024 / o.agents * 1024); // KiB per agent
          console.log(`\n=== ${key} ${scenario}: ${o.agents} agents${scenario.startsWith('hist') ? ` × ${o.history} messages` : ''}`);
          console.log(`  RSS ${fmt(before.rssKiB / 1024)} → ${fmt(after.rssKiB / 1024)} MiB: ${per(after.rssKiB - before.rssKiB)} KiB/agent`);
          if (after.wasm) {
            console.log(`  wasm linear memory ${fmt(before.wasm.wasmMemoryBytes / 1048576)} → ${fmt(after.wasm.wasmMemoryBytes / 1048576)} MiB `
              + `(${per((after.wasm.wasmMemoryBytes - before.wasm.wasmMemoryBytes) / 1024)} KiB/agent); agents constructed by this wasm instance: ${before.wasm.hostsCreated} → ${after.wasm.hostsCreated}`);
          }
          if (cdp) {
            const h = (s) => `used ${fmt(s.used)} / committed ${fmt(s.total)} MiB`;
            console.log(`  RSS before forced GC: ${fmt(before.rssBeforeGcKiB / 1024)} → ${fmt(after.rssBeforeGcKiB / 1024)} MiB (${per(after.rssBeforeGcKiB - before.rssBeforeGcKiB)} KiB/agent)`);
            console.log(`  JS heap before GC: ${h(before.heap.pre)} → ${h(after.heap.pre)}`);
            console.log(`  JS heap after GC:  ${h(before.heap.post)} → ${h(after.heap.post)}; used ${fmt((after.heap.post.used - before.heap.post.used) * 1024 / o.agents)} KiB/agent, committed ${fmt((after.heap.post.total - before.heap.post.total) * 1024 / o.agents)} KiB/agent`);
            console.log(`  raw after: ${JSON.stringify(after.heap.post.raw)}`);
            if (before.heap.objects && after.heap.objects) {
              console.log('  JS heap objects that grew (heap snapshot):');
              for (const line of objectGrowth(before.heap.objects, after.heap.objects, o.agents)) console.log(line);
            }
          }
          const classes = new Set([...Object.keys(before.classes), ...Object.keys(after.classes)]);
          for (const c of classes) {
            const d = (after.classes[c] ?? 0) - (before.classes[c] ?? 0);
            console.log(`  ${per(d).padStart(8)} KiB/agent  ${c} (${fmt((after.classes[c] ?? 0) / 1024)} MiB total)`);
          }
          const one = await debugMemory(inst, `${scenario}-0`);
          if (one) console.log(`  agent ${scenario}-0: ${JSON.stringify(one)}`);
          const disk = diskBytes(inst.persistDir);
          console.log(`  on disk: ${disk.files} dbs, ${fmt(disk.db / 1024 / disk.files)} KiB db + ${fmt(disk.wal / 1024 / disk.files)} KiB WAL + ${fmt(disk.shm / 1024 / disk.files)} KiB shm per db`);
          const bigReservations = after.maps.filter((m) => m.name === '[anon]' && m.sizeKiB >= 6 * 1024 * 1024);
          console.log(`  ≥6 GiB anonymous reservations (one per wasm memory): ${bigReservations.length} (before: ${before.maps.filter((m) => m.name === '[anon]' && m.sizeKiB >= 6 * 1024 * 1024).length})`);
          const prev = new Map(before.maps.map((m) => [m.key, m.rssKiB]));
          const grown = after.maps.map((m) => ({ ...m, d: m.rssKiB - (prev.get(m.key) ?? 0) })).sort((a, b) => b.d - a.d).slice(0, 6);
          for (const m of grown) console.log(`    +${fmt(m.d / 1024)} MiB in ${m.key} ${m.perms} (${fmt(m.sizeKiB / 1024)} MiB ${m.name})`);
          cdp?.close();
        } finally {
          tabs.forEach(drop);
          await inst.close();
        }
      }
    }
  } finally {
    await model.close();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => { console.error(err?.stack || String(err)); process.exit(1); });

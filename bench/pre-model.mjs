#!/usr/bin/env node
// Where the time before the model is called goes, for ours and for the runtime's floor (companion
// of bench/run.mjs; same workers, model server and client). A V8 sampling profile (50 µs) of the
// worker runs over K short turns; each turn's window is from the client's send to the model
// server's receipt of the request (the profile's clock and this process's are both the system's
// monotonic clock), and the samples inside the windows are summed by function, inclusive (a
// function and everything it called) and by self time.
//
// With `--window end` the window is the turn's end instead: from the model server's last byte to
// the client's receipt of the terminal frame (storing the answer, the transcript, the done frame).
// `--window first` profiles from the model's first word to the client's receipt of the first
// text chunk, on turns of `--tokens N` words (3 unless given; `--pace MS` apart, as fast as the
// model server can unless given).
// With `--fresh 1` every measured turn is a fresh agent's second turn (after one 3-token turn), the
// turn bench/run.mjs measures; otherwise all turns go to one agent, whose history grows.
//
//   node bench/pre-model.mjs [--turns 40] [--workers ours,floor] [--top 40] [--window start|first|end|turn] [--tokens N] [--pace MS] [--history N] [--fresh 1] [--timeline N] [--out DIR]

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { seed } from './history.mjs';
import { freePort, inspect } from './inspector.mjs';
import { startModelServer } from '../tests/support/model-server.mjs';
import {
  drop, ensureThinkBuilt, fmt, openTab, settle, stageOurs, startInstance, turn, workerSpecs,
} from './run.mjs';

function args() {
  const a = process.argv.slice(2);
  const o = { turns: 40, workers: 'ours,floor', top: 40, out: null, window: 'start', timeline: 0, history: 0, fresh: 0, tokens: 3, pace: 0 };
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '');
    if (!(k in o)) throw new Error(`unknown option ${a[i]}`);
    o[k] = ['workers', 'out', 'window'].includes(k) ? a[i + 1] : Number(a[i + 1]);
  }
  if (!['start', 'first', 'end', 'turn'].includes(o.window)) throw new Error('--window is start, first, end or turn');
  return o;
}

const label = (f) => {
  const url = f.url ? basename(f.url) : '';
  return `${f.functionName || '(anonymous)'}${url ? `  ${url}:${f.lineNumber + 1}` : ''}`;
};

const SAMPLE_US = 50;
const MAX_SAMPLE_US = 10 * SAMPLE_US;

/** This process's performance.now() (ms) on the system's monotonic clock, in µs. */
const monoOffsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
const monoUs = (perfMs) => perfMs * 1000 + monoOffsetUs;

/**
 * Sums the non-idle samples of `profile` that fall inside `windows` ([fromUs, toUs] on the
 * monotonic clock): { totalMs, programMs, self, inclusive } with per-function milliseconds
 * (programMs: the samples of the isolate's thread outside JS and wasm, `(program)`).
 */
export function windowProfile(profile, windows) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const idle = new Set(['(idle)', '(program)']);
  const self = new Map();
  const inclusive = new Map();
  let totalUs = 0;
  // '(program)': the isolate's thread busy outside JS and wasm (the runtime's own native work there).
  let programUs = 0;
  let t = profile.startTime;
  let w = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    // A sample weighs the time until the next one, capped: a late sample (the sampler descheduled
    // on a busy machine) must not charge its whole delay to the function it caught.
    const dt = Math.min(profile.timeDeltas[i + 1] ?? 0, MAX_SAMPLE_US);
    while (w < windows.length && t > windows[w][1]) w++;
    if (w >= windows.length) break;
    if (t < windows[w][0]) continue;
    const id = profile.samples[i];
    const fn = byId.get(id).callFrame.functionName;
    if (fn === '(program)') programUs += dt;
    if (idle.has(fn)) continue;
    totalUs += dt;
    const key = label(byId.get(id).callFrame);
    self.set(key, (self.get(key) ?? 0) + dt);
    const seen = new Set();
    for (let n = id; n !== undefined; n = parent.get(n)) {
      const k = label(byId.get(n).callFrame);
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
    }
  }
  const ms = (m) => [...m].map(([k, us]) => [k, us / 1000]).sort((a, b) => b[1] - a[1]);
  return { totalMs: totalUs / 1000, programMs: programUs / 1000, self: ms(self), inclusive: ms(inclusive) };
}

/**
 * One window's busy stretches in order: [offset ms, length ms, what ran], where "what ran" is the
 * deepest frame of our own code (a Rust function of this crate or a named JS function), so the
 * gaps between stretches show where the turn waited on the runtime (a commit, the network).
 */
export function windowTimeline(profile, [from, to]) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const ours = (f) => /durable_chat::(agent|core|store|model|protocol|log)/.test(f.functionName) || (f.url && !/index\.js$/.test(f.url) && f.functionName);
  const short = (f) => (f.functionName || '(anonymous)').replace(/::h[0-9a-f]{16}$/, '').replace(/^durable_chat::/, '');
  const what = (id) => {
    const leaf = short(byId.get(id).callFrame);
    for (let n = id; n !== undefined; n = parent.get(n)) {
      const f = byId.get(n).callFrame;
      if (ours(f)) return n === id ? leaf : `${short(f)} ← ${leaf}`;
    }
    return leaf;
  };
  const runs = [];
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    if (t < from) continue;
    if (t > to) break;
    const f = byId.get(profile.samples[i]).callFrame.functionName;
    if (f === '(idle)' || f === '(program)') continue;
    const label = what(profile.samples[i]);
    const dt = Math.min(profile.timeDeltas[i + 1] ?? 0, MAX_SAMPLE_US);
    const last = runs[runs.length - 1];
    if (last && last.label === label && t - last.end < 2 * MAX_SAMPLE_US) {
      last.end = t + dt;
    } else runs.push({ start: t, end: t + dt, label });
  }
  return runs.map((r) => [(r.start - from) / 1000, (r.end - r.start) / 1000, r.label]);
}

/**
 * Our agent's pre-model work by stage: the inclusive time of the functions that own each stage
 * (a stage nested in another is also counted there: the rows overlap, they do not sum).
 */
const STAGES = [
  ['the socket message handed to wasm and parsed (on_message)', /AgentHost::on_message/],
  ['  the core deciding (admission, turn start)', /durable_chat::core::.*Core.*::handle/],
  ['  storage writes (one transaction per batch)', /SqlStore::apply_all/],
  ['  log lines', /AgentHost::(write_log|log_line)/],
  ['  frames to tabs', /AgentHost::(send_frame|send_transcript|broadcast)/],
  ['the before_turn round trip (host side)', /(before_turn|prepare_turn|Prepare)/i],
  ['the model call: request built and fetch started', /stream_model/],
  ['  request body serialised', /serde_json::value::ser|ModelProvider.*plan|::plan::/],
  ['  fetch started (runtime)', /Fetch::send/],
  ['wasm-bindgen glue and runtime calls (wasm-to-js)', /^wasm-to-js$/],
];

function stageLines(inclusive, turns) {
  return STAGES.map(([name, re]) => {
    let best = 0;
    for (const [k, v] of inclusive) if (re.test(k)) best = Math.max(best, v);
    return `  ${fmt(best / turns).padStart(7)}  ${name}`;
  });
}

async function main() {
  const o = args();
  const work = mkdtempSync(join(tmpdir(), 'durable-chat-pre-model-'));
  const out = o.out ?? join(work, 'profiles');
  mkdirSync(out, { recursive: true });
  const ours = stageOurs(join(work, 'ours-build'));
  const specs = workerSpecs(ours, ensureThinkBuilt());
  const received = new Map();
  const model = await startModelServer({
    onTiming(rec) {
      const m = /pre-model-turn (\S+)/.exec(rec.lastUserText);
      if (m) received.set(m[1], rec);
    },
  });
  try {
    for (const key of o.workers.split(',')) {
      const port = await freePort();
      const inst = await startInstance(specs[key], { modelUrl: model.url, persistDir: join(work, `${key}-do`), miniflare: { inspectorPort: port } });
      try {
        const cdp = await inspect(port);
        // With `--history N` the agent is first grown to N messages by tail requests, and every
        // turn sends only its new message (as a long chat's tab does).
        const c = o.history
          ? await seed({ openTab }, inst, 'pre-model', o.history)
          : await openTab(inst, 'pre-model');
        const tail = o.history > 0;
        for (let i = 0; i < 3; i++) await turn(c, `[tokens:3] warm ${i}`, { tail });
        await settle(inst);
        await cdp.call('Profiler.enable');
        await cdp.call('Profiler.setSamplingInterval', { interval: SAMPLE_US });
        await cdp.call('Profiler.start');
        const sent = [];
        for (let i = 0; i < o.turns; i++) {
          const tag = `${key}-${i}`;
          const tab = o.fresh ? await openTab(inst, `pre-model-fresh-${i}`) : c;
          if (o.fresh) await turn(tab, '[tokens:3] priming', { tail: false });
          const t = await turn(tab, `[tokens:${o.tokens}]${o.pace ? ` [delay:${o.pace}]` : ''} pre-model-turn ${tag}`, { tail: tail && !o.fresh });
          sent.push([tag, t]);
          if (o.fresh) drop(tab);
          await settle(inst, 300);
        }
        const { profile } = await cdp.call('Profiler.stop');
        cdp.close();
        drop(c);
        writeFileSync(join(out, `${key}-pre-model.cpuprofile`), JSON.stringify(profile));
        const span = ([tag, t]) => ({
          start: [monoUs(t.tSend), monoUs(received.get(tag).receivedAt)],
          first: [monoUs(received.get(tag).firstContentAt), monoUs(t.firstText)],
          end: [monoUs(received.get(tag).lastByteAt), monoUs(t.doneAt)],
          turn: [monoUs(t.tSend), monoUs(t.doneAt)],
        })[o.window];
        const windows = sent.filter(([tag]) => received.has(tag)).map(span);
        const wall = windows.reduce((s, [a, z]) => s + (z - a), 0) / 1000 / Math.max(1, windows.length);
        const b = windowProfile(profile, windows);
        const what = {
          start: 'send → model receives the request',
          first: "model's first word → first text chunk",
          end: "model's last byte → terminal frame",
          turn: 'send → terminal frame',
        }[o.window];
        console.log(`\n=== ${inst.label}: ${windows.length} turns; ${what}: ${fmt(wall)} ms wall, ${fmt(b.totalMs / windows.length)} ms of it sampled in the worker's isolate, ${fmt(b.programMs / windows.length)} ms on its thread outside JS and wasm ('(program)')`);
        if (key === 'ours' && o.window === 'start') {
          console.log('by stage (inclusive, ms per request; nested rows overlap their parent):');
          for (const l of stageLines(b.inclusive, windows.length)) console.log(l);
        }
        if (o.timeline) {
          const order = windows.map((w, i) => [w[1] - w[0], i]).sort((a, b) => a[0] - b[0]);
          const median = windows[order[Math.floor(order.length / 2)][1]];
          console.log(`timeline of the median turn (${fmt((median[1] - median[0]) / 1000)} ms): offset ms, length ms, what ran`);
          for (const [at, len, l] of windowTimeline(profile, median).slice(0, o.timeline)) {
            console.log(`  ${fmt(at).padStart(7)} ${fmt(len).padStart(6)}  ${l.slice(0, 140)}`);
          }
        }
        console.log('inclusive (a function and what it called), ms per request:');
        for (const [k, v] of b.inclusive.slice(0, o.top)) console.log(`  ${fmt(v / windows.length).padStart(7)}  ${k}`);
        console.log('self, ms per request:');
        for (const [k, v] of b.self.slice(0, Math.ceil(o.top / 2))) console.log(`  ${fmt(v / windows.length).padStart(7)}  ${k}`);
      } finally {
        await inst.close();
      }
    }
    console.log(`\nprofiles in ${out} (Chrome DevTools → Performance → load)`);
  } finally {
    await model.close();
    if (!o.out) rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err?.stack || String(err));
  process.exit(1);
});

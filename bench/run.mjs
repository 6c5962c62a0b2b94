#!/usr/bin/env node
// Side-by-side benchmark: our Rust agent (build/, class ChatAgent) against a minimal TypeScript
// agent on npm @cloudflare/think 0.23.0 (bench/think-worker/, class ThinkAgent), both under the
// same Miniflare/workerd (root node_modules), each in its own Miniflare instance (= its own workerd
// process, so CPU and RSS can be attributed), one scripted model server (tests/support/
// model-server.mjs, with its timing hook), one WebSocket client (tests/support/harness.mjs connect
// + chatRequest, i.e. the frames useAgentChat sends). Repetitions are interleaved A B B A ….
// Prints a table of median / p90 per metric and the ratio ours/think, the load caused by other
// processes during each phase, and how each figure is measured. It asserts nothing on timings.
//
//   node bench/run.mjs [--quick] [--tokens N] [--reps N] [--tabs N] [--agents N]
//                      [--history N] [--build] [--json FILE]
//
// See bench/README.md for what each metric means.

import { Miniflare, convertV4MiniflareOptions } from 'miniflare';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  closeSync, copyFileSync, existsSync, fstatSync, mkdirSync, mkdtempSync, openSync, readFileSync,
  readSync, readdirSync, rmSync, statSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { fileURLToPath, pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { COMPATIBILITY_DATE, chatRequest, connect, isDone, kebab, userMessage } from '../tests/support/harness.mjs';
import { startModelServer } from '../tests/support/model-server.mjs';
import { freePort, inspect } from './inspector.mjs';
import { LONG, historyRows, historyTargets, phaseHistoryMemory, phaseHistoryTurns } from './history.mjs';
import { phaseLoad, uploadHistories } from './load.mjs';
import { cacheOptions, cacheRows, cacheTargets, phaseCache } from './cache.mjs';
import { targetLines } from './targets.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const THINK_DIR = join(ROOT, 'bench', 'think-worker');
const FLOOR_DIR = join(ROOT, 'bench', 'floor-worker');
const BUILD_LOCK = '/tmp/durable-chat-build.lock';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

// ---- options -------------------------------------------------------------------------------

function parseArgs(argv) {
  const flags = new Set();
  const values = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const [k, inline] = a.slice(2).split('=');
    if (['quick', 'build', 'help'].includes(k)) flags.add(k);
    else {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`--${k} needs a value`);
      values[k] = v;
    }
  }
  if (flags.has('help')) {
    console.log('node bench/run.mjs [--quick] [--phases turns,sqlite,fanout,connect,load,memory,history,cache] [--tokens N] [--reps N] [--tabs N] [--agents N] [--history N] [--history-long N] [--load-agents N] [--load-tokens N] [--load-reps N] [--memory-modes turns,upload] [--memory-warm-turns N] [--cache-turns N] [--build] [--json FILE]');
    process.exit(0);
  }
  const quick = flags.has('quick');
  const int = (k, d) => {
    if (values[k] === undefined) return d;
    const n = Number(values[k]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${k} must be a positive integer`);
    return n;
  };
  const known = ['tokens', 'reps', 'tabs', 'agents', 'history', 'json', 'fanout-tokens', 'connects', 'paced-tokens', 'pace-ms', 'phases', 'history-agents', 'history-long',
    'load-agents', 'load-tokens', 'load-reps', 'memory-modes', 'memory-warm-turns', 'cache-turns'];
  for (const k of Object.keys(values)) if (!known.includes(k)) throw new Error(`unknown option --${k}`);
  const reps = int('reps', quick ? 3 : 10);
  const allPhases = ['turns', 'sqlite', 'fanout', 'connect', 'load', 'memory', 'history', 'cache'];
  const phases = new Set((values.phases ?? allPhases.join(',')).split(',').map((p) => p.trim()).filter(Boolean));
  for (const p of phases) if (!allPhases.includes(p)) throw new Error(`unknown phase ${p} (${allPhases.join(', ')})`);
  return {
    phases,
    quick,
    build: flags.has('build'),
    tokens: int('tokens', 1000),
    reps,
    sqliteReps: Math.max(1, Math.ceil(reps / 3)),
    tabs: int('tabs', 50),
    fanoutTokens: int('fanout-tokens', 200),
    pacedTokens: int('paced-tokens', 100),
    paceMs: int('pace-ms', 5),
    agents: int('agents', quick ? 10 : 100),
    history: int('history', 50),
    connects: int('connects', quick ? 10 : 30),
    historyReps: reps,
    historyAgents: int('history-agents', quick ? 2 : 4),
    historyLong: int('history-long', LONG),
    loadAgents: int('load-agents', quick ? 10 : 40),
    loadTokens: int('load-tokens', 300),
    loadReps: int('load-reps', quick ? 1 : 3),
    memoryWarmTurns: int('memory-warm-turns', quick ? 3 : 30),
    memoryModes: (values['memory-modes'] ?? 'turns,upload').split(',').map((m) => {
      if (!['turns', 'upload'].includes(m)) throw new Error(`unknown memory mode ${m} (turns, upload)`);
      return m;
    }),
    ...cacheOptions(int, quick),
    json: values.json ?? null,
  };
}

// ---- /proc helpers -------------------------------------------------------------------------

const CLK_TCK = 100; // Linux USER_HZ; /proc/<pid>/stat times are in these ticks
const TICK_MS = 1000 / CLK_TCK;

function readProcStat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // fields after ")": state(3) ppid(4) … utime(14) stime(15); rest[0] is field 3
    return { ppid: Number(rest[1]), utime: Number(rest[11]), stime: Number(rest[12]) };
  } catch {
    return null;
  }
}

function childPids(ppid) {
  const out = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const st = readProcStat(Number(e));
    if (st && st.ppid === ppid) out.push(Number(e));
  }
  return out;
}

function descendants(pid) {
  const all = [];
  const stack = [pid];
  while (stack.length) {
    for (const c of childPids(stack.pop())) { all.push(c); stack.push(c); }
  }
  return all;
}

/**
 * A CPU clock (ms) for `pids`: the time on CPU of every thread, from
 * /proc/<pid>/task/<tid>/schedstat (ns), so that a turn of a few ms is not rounded to the 10 ms
 * ticks of /proc/<pid>/stat. A thread that has exited keeps the time it was last seen with; where
 * schedstat cannot be read the process's utime+stime ticks are used.
 */
function cpuClock(pids) {
  const seen = new Map(); // `${pid}/${tid}` → ms on CPU when last read
  let gone = 0; // ms of the threads that have exited
  const threadMs = (pid, tid) => {
    try {
      const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      return Number.isFinite(ns) ? ns / 1e6 : null;
    } catch {
      return null;
    }
  };
  return () => {
    let ticksMs = 0;
    const live = new Set();
    for (const p of pids) {
      let tids = [];
      try {
        tids = readdirSync(`/proc/${p}/task`);
      } catch {
        continue;
      }
      const times = tids.map((tid) => [`${p}/${tid}`, threadMs(p, tid)]);
      if (times.every(([, ms]) => ms === null)) {
        const st = readProcStat(p);
        if (st) ticksMs += (st.utime + st.stime) * TICK_MS;
        continue;
      }
      // A thread that exited between the listing and its read counts as exited.
      for (const [key, ms] of times) {
        if (ms === null) continue;
        seen.set(key, ms);
        live.add(key);
      }
    }
    for (const [key, last] of seen) {
      if (!live.has(key)) {
        gone += last;
        seen.delete(key);
      }
    }
    let ms = gone + ticksMs;
    for (const v of seen.values()) ms += v;
    return ms;
  };
}

/** RSS in KiB summed over pids (VmRSS). */
function rssKiB(pids) {
  let kb = 0;
  for (const p of pids) {
    try {
      const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      if (m) kb += Number(m[1]);
    } catch { /* gone */ }
  }
  return kb;
}

/** Busy jiffies of the whole machine (all CPUs, everything but idle and iowait). */
function machineBusyMs() {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = line;
  return (user + nice + system + irq + softirq + (steal || 0)) * TICK_MS;
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);

// ---- statistics and formatting ---------------------------------------------------------------

function quantile(xs, q) {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return NaN;
  const pos = (v.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}
const median = (xs) => quantile(xs, 0.5);
const p90 = (xs) => quantile(xs, 0.9);

function fmt(x) {
  if (!Number.isFinite(x)) return '-';
  const a = Math.abs(x);
  if (a >= 1000) return x.toFixed(0);
  if (a >= 100) return x.toFixed(1);
  if (a >= 10) return x.toFixed(2);
  return x.toFixed(3);
}

// ---- building / staging the two workers --------------------------------------------------------

function stageOurs(dir) {
  // BENCH_OURS_BUILD=DIR: another build of ours (an A/B comparison of two builds against the same peers).
  const build = process.env.BENCH_OURS_BUILD || join(ROOT, 'build');
  if (!existsSync(join(build, 'index_bg.wasm'))) {
    throw new Error('build/index_bg.wasm missing: run `flock /tmp/durable-chat-build.lock bash scripts/build.sh` (or pass --build)');
  }
  // Snapshot the build under the build lock so that a concurrent rebuild cannot change the worker
  // between phases (the memory phase starts new Miniflare instances later).
  mkdirSync(dir, { recursive: true });
  execFileSync('flock', [BUILD_LOCK, 'cp', join(build, 'index.js'), join(build, 'index_bg.wasm'), dir]);
  return { dir, wasm: join(dir, 'index_bg.wasm'), mtime: statSync(join(build, 'index_bg.wasm')).mtime };
}

function ensureThinkBuilt() {
  const dist = join(THINK_DIR, 'dist', 'index.js');
  const inputs = [join(THINK_DIR, 'src', 'index.ts'), join(THINK_DIR, 'build.mjs'), join(THINK_DIR, 'package-lock.json')];
  const stale = !existsSync(dist) || inputs.some((f) => existsSync(f) && statSync(f).mtimeMs > statSync(dist).mtimeMs);
  if (!stale) return dist;
  if (!existsSync(join(THINK_DIR, 'node_modules', '@cloudflare', 'think'))) {
    console.error('bench: installing bench/think-worker dependencies (npm ci) …');
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: THINK_DIR, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  console.error('bench: bundling bench/think-worker …');
  execFileSync(process.execPath, [join(THINK_DIR, 'build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] });
  return dist;
}

// ---- one worker = one Miniflare instance = one workerd process ------------------------------

/** Vars for one worker from the environment (`BENCH_OURS_VARS=LOG_LEVEL=warn,…`): to measure
 * what a setting costs against the same run's peers. */
function extraVars(key) {
  const vars = {};
  for (const kv of (process.env[`BENCH_${key.toUpperCase()}_VARS`] ?? '').split(',').filter(Boolean)) {
    const at = kv.indexOf('=');
    if (at > 0) vars[kv.slice(0, at)] = kv.slice(at + 1);
  }
  return vars;
}

async function startInstance(spec, { modelUrl, persistDir, preventEviction = false, miniflare = {} }) {
  const before = new Set(descendants(process.pid));
  const mf = new Miniflare(convertV4MiniflareOptions({
    modules: spec.modules,
    modulesRoot: spec.modulesRoot,
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: spec.compatibilityFlags,
    durableObjects: { [spec.binding]: { className: spec.className, useSQLite: true, unsafePreventEviction: preventEviction } },
    resourcePersistencePath: persistDir,
    cf: false,
    host: '127.0.0.1',
    port: 0,
    // No request rates: the peer has none, and a phase sends more than a minute's default share.
    bindings: { OPENAI_BASE_URL: modelUrl, OPENAI_API_KEY: 'bench-key', MODEL: 'scripted-model', MESSAGE_CONCURRENCY: 'queue', RATE_LIMIT_PER_CONNECTION: '0', RATE_LIMIT_PER_AGENT: '0', ...extraVars(spec.key) },
    ...miniflare,
  }));
  const ready = await mf.ready;
  const pids = descendants(process.pid).filter((p) => !before.has(p));
  if (!pids.length) throw new Error(`could not find the workerd process of ${spec.label}`);
  const ns = await mf.getDurableObjectNamespace(spec.binding);
  return {
    ...spec,
    mf,
    pids,
    url: new URL(ready).origin,
    persistDir,
    /** Path of the DO's SQLite WAL file for instance `name`. */
    walPath(name) {
      return join(persistDir, 'do', `-${spec.className}`, `${ns.idFromName(name).toString()}.sqlite-wal`);
    },
    cpu: cpuClock(pids),
    rss: () => rssKiB(pids),
    idleCpuPerMs: 0,
    close: () => mf.dispose(),
  };
}

// ---- the client: useAgentChat's frames -----------------------------------------------------

function nanoid8() {
  return randomUUID().replace(/-/g, '').slice(0, 8);
}

/**
 * Open a tab the way useAgent + useAgentChat do: socket with _pk, then the resume probe. Resolves
 * once the connect transcript and the probe's answer have arrived (the hook is then "ready").
 * Each frame's receipt time is kept in client.times (same index as client.frames).
 */
async function openTab(inst, name) {
  const t0 = now();
  const c = await connect(inst.url, inst.binding, name);
  const tOpen = now();
  // Receipt time of each frame, same index as c.frames (harness's own listener runs first and
  // pushes the parsed frame); frames that arrived together with the upgrade have no time.
  c.times = [];
  // The tab's message list as useAgentChat keeps it: replaced by a transcript, a message replaced
  // by an update of its id, its own messages and answers added as it sends and streams (turn()).
  c.transcript = [];
  const track = (f) => {
    if (f?.type === 'cf_agent_chat_messages' && Array.isArray(f.messages)) c.transcript = f.messages;
    if (f?.type === 'cf_agent_message_updated' && f.message) {
      c.transcript = c.transcript.map((m) => (m.id === f.message.id ? f.message : m));
    }
  };
  c.frames.forEach(track);
  c.ws.on('message', () => {
    c.times[c.frames.length - 1] = now();
    track(c.frames[c.frames.length - 1]);
  });
  c.send({ type: 'cf_agent_stream_resume_request', probeId: nanoid8() });
  await c.waitFor('cf_agent_chat_messages', 30000);
  c.cursor = 0;
  await c.waitFor((f) => f?.type === 'cf_agent_stream_resume_none' || f?.type === 'cf_agent_stream_resuming', 30000);
  c.cursor = 0;
  await c.waitFor('cf_agent_identity', 30000);
  const ready = now();
  c.connectMs = ready - t0;
  c.openMs = tOpen - t0;
  return c;
}

/**
 * A listening tab for the fan-out phase: the same socket URL and resume probe as openTab, but it
 * only looks for terminal frames (a substring test; only those are parsed) and notes when each
 * arrived, so that 50 of them in this one process do not make the client the bottleneck.
 * Resolves once the probe is answered. `doneAt(id)` resolves with the receipt time of the
 * `done: true` frame of request `id`.
 */
async function openListeningTab(inst, name) {
  const base = new URL(inst.url);
  const ws = new WebSocket(`ws://${base.host}/agents/${kebab(inst.binding)}/${name}?_pk=${randomUUID()}`);
  const done = new Map();
  const waiting = new Map();
  let answered;
  const probeAnswered = new Promise((resolve) => { answered = resolve; });
  ws.on('message', (data) => {
    const text = data.toString();
    if (text.includes('cf_agent_stream_resume_none') || text.includes('cf_agent_stream_resuming')) answered();
    if (!text.includes('"done":true')) return;
    const at = now();
    let id;
    try { id = JSON.parse(text).id; } catch { return; }
    done.set(id, at);
    waiting.get(id)?.(at);
  });
  let timer;
  const stalled = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`listening tab of ${inst.key}: not open and answered within 30 s`)), 30000);
  });
  const ready = async () => {
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    ws.send(JSON.stringify({ type: 'cf_agent_stream_resume_request', probeId: nanoid8() }));
    await probeAnswered;
  };
  await Promise.race([ready(), stalled]).finally(() => clearTimeout(timer));
  return {
    ws,
    doneAt: (id) => (done.has(id) ? Promise.resolve(done.get(id)) : new Promise((resolve) => waiting.set(id, resolve))),
  };
}

/**
 * Close a tab without waiting for the close handshake (waiting costs up to seconds per socket
 * here); the server-side close work is absorbed by settle() before the next measurement.
 */
function drop(c) {
  try { c.ws.close(1000); } catch { c.ws.terminate(); }
}

/**
 * Send a user message as useAgentChat's sendMessage does (full client transcript + new message);
 * wait for the terminal frame. Returns timings (performance.now()).
 */
async function turn(c, text, { timeoutMs = 120000, tail = false } = {}) {
  const id = nanoid8();
  const msg = userMessage(nanoid8(), text);
  const mark = c.frames.length;
  c.cursor = mark;
  const tSend = now();
  c.send(chatRequest(id, tail ? [msg] : [...c.transcript, msg]));
  c.transcript = [...c.transcript, msg];
  await c.waitFor(isDone(id), timeoutMs);
  let firstText = NaN;
  let doneAt = NaN;
  let chunks = 0;
  let error = null;
  const answer = { id: '', role: 'assistant', parts: [{ type: 'text', text: '' }] };
  for (let i = mark; i < c.frames.length; i++) {
    const f = c.frames[i];
    if (f?.type !== 'cf_agent_use_chat_response' || f.id !== id) continue;
    if (f.done) { doneAt = c.times[i]; if (f.error) error = f.body; break; }
    if (f.error) { error = f.body; continue; }
    chunks++;
    const chunk = JSON.parse(f.body);
    if (chunk.type === 'start') answer.id = chunk.messageId ?? nanoid8();
    if (chunk.type !== 'text-delta') continue;
    if (Number.isNaN(firstText)) firstText = c.times[i];
    answer.parts[0].text += chunk.delta;
  }
  if (error) throw new Error(`turn failed on ${c.url}: ${error}`);
  // A turn's end sends the transcript (which tracking took in) or, to a requester whose list
  // matches the store, updates only: then the list keeps the answer as streamed.
  const transcriptCame = c.frames.slice(mark).some((f) => f?.type === 'cf_agent_chat_messages');
  if (!transcriptCame) c.transcript = [...c.transcript, answer];
  return { id, tSend, firstText, doneAt, chunks };
}

// ---- SQLite WAL watcher ------------------------------------------------------------------

/**
 * Counts what SQLite appends to a WAL file while it runs, by polling the file every ~1 ms:
 * frames (one page each, 24-byte header + page) and commit frames (header field "db size after
 * commit" ≠ 0 ⇒ one write transaction). A checkpoint + WAL restart (new salts in the header) is
 * followed: the rest of the old generation is read first (it is only overwritten after ~1000 new
 * frames), then the new one from its start.
 */
class WalWatcher {
  constructor(path) {
    this.path = path;
    this.fd = null;
    this.salts = null;
    this.offset = 32;
    this.pageSize = 0;
    this.frames = 0;
    this.commits = 0;
    this.restarts = 0;
    this.timer = null;
    this.pageWrites = new Map(); // page number → times written (for attributing writes to tables)
  }

  open() {
    if (this.fd === null && existsSync(this.path)) this.fd = openSync(this.path, 'r');
    return this.fd !== null;
  }

  header() {
    const b = Buffer.alloc(32);
    if (readSync(this.fd, b, 0, 32, 0) < 32) return null;
    const magic = b.readUInt32BE(0);
    if (magic !== 0x377f0682 && magic !== 0x377f0683) return null;
    return { pageSize: b.readUInt32BE(8), salt1: b.readUInt32BE(16), salt2: b.readUInt32BE(20) };
  }

  /** Walk frames of generation `salts` from this.offset; count=false only skips. */
  scan(salts, count) {
    const size = fstatSync(this.fd).size;
    const frameSize = 24 + this.pageSize;
    const hdr = Buffer.alloc(24);
    while (this.offset + frameSize <= size) {
      if (readSync(this.fd, hdr, 0, 24, this.offset) < 24) break;
      if (hdr.readUInt32BE(8) !== salts.salt1 || hdr.readUInt32BE(12) !== salts.salt2) break;
      if (count) {
        const pgno = hdr.readUInt32BE(0);
        this.pageWrites.set(pgno, (this.pageWrites.get(pgno) ?? 0) + 1);
        this.frames++;
        if (hdr.readUInt32BE(4) !== 0) this.commits++;
      }
      this.offset += frameSize;
    }
  }

  poll(count = true) {
    if (!this.open()) return;
    const h = this.header();
    if (!h) return;
    this.pageSize = h.pageSize;
    if (!this.salts) {
      this.salts = h;
      this.offset = 32;
      this.scan(h, count);
      return;
    }
    if (h.salt1 !== this.salts.salt1 || h.salt2 !== this.salts.salt2) {
      this.scan(this.salts, count); // finish the old generation
      this.salts = h;
      this.offset = 32;
      this.restarts++;
    }
    this.scan(h, count);
  }

  start() {
    this.poll(false); // skip what is already there
    this.pageWrites.clear();
    this.frames = 0;
    this.commits = 0;
    this.restarts = 0;
    this.timer = setInterval(() => this.poll(true), 1);
  }

  stop() {
    clearInterval(this.timer);
    this.poll(true);
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    return {
      commits: this.commits,
      frames: this.frames,
      walBytes: this.frames * (24 + this.pageSize) + this.restarts * 32,
      pageSize: this.pageSize,
      restarts: this.restarts,
    };
  }
}

// ---- phases ---------------------------------------------------------------------------

/** CPU ms per 20 ms sample below which a worker counts as still. */
const STILL_MS = 1;

/** Wait until the instance's CPU clock stops moving (< 1 ms in each 20 ms over 60 ms), at most maxMs. */
async function settle(inst, maxMs = 1500) {
  const t0 = now();
  let last = inst.cpu();
  let stable = 0;
  while (now() - t0 < maxMs) {
    await sleep(20);
    const c = inst.cpu();
    if (c - last < STILL_MS) stable++; else stable = 0;
    last = c;
    if (stable >= 3) break;
  }
}

/** Interleaved order for repetition r: A B C, C B A, A B C, … */
const orderFor = (r, list) => (r % 2 === 0 ? list : [...list].reverse());

class PhaseLoad {
  constructor(name, insts) {
    this.name = name;
    this.insts = insts;
    this.t0 = now();
    this.busy0 = machineBusyMs();
    this.self0 = process.cpuUsage();
    this.w0 = insts.map((i) => i.cpu());
  }

  end() {
    const wall = now() - this.t0;
    const busy = machineBusyMs() - this.busy0;
    const selfUs = process.cpuUsage(this.self0);
    const self = (selfUs.user + selfUs.system) / 1000;
    const workerd = this.insts.reduce((s, inst, k) => s + (inst.cpu() - this.w0[k]), 0);
    const other = Math.max(0, busy - self - workerd);
    return {
      phase: this.name,
      wallS: wall / 1000,
      workerdCores: workerd / wall,
      benchNodeCores: self / wall,
      otherCores: other / wall,
      load1: loadavg()[0],
    };
  }
}

async function measureIdle(insts, ms) {
  const c0 = insts.map((i) => i.cpu());
  const t0 = now();
  await sleep(ms);
  const dt = now() - t0;
  insts.forEach((inst, k) => { inst.idleCpuPerMs = Math.max(0, (inst.cpu() - c0[k]) / dt); });
}

async function phaseTurns(pair, opts, timingOf, results, uniq) {
  const prompt = (tag) => `[tokens:${opts.tokens}] ${tag}`;
  // Warm-up per worker (JIT, wasm instantiation, first-use code paths): not measured.
  for (const inst of pair) {
    const c = await openTab(inst, `warm-${uniq}`);
    await turn(c, '[tokens:3] warm');
    await turn(c, prompt(`bench:warm-${inst.key}-${uniq}`));
    drop(c);
  }
  // The idle rate subtracted from each turn's CPU is measured after the warm-up: right after a
  // start, a process still compiles (the wasm's optimising tier, in background threads), and that
  // rate taken for idle would be subtracted from every turn.
  await measureIdle(pair, opts.quick ? 500 : 1500);
  for (const inst of pair) results[inst.key].idleCpuMsPerS = [inst.idleCpuPerMs * 1000];
  for (let r = 0; r < opts.reps; r++) {
    for (const inst of orderFor(r, pair)) {
      const res = results[inst.key];
      const c = await openTab(inst, `turns-${uniq}-${r}`);
      await turn(c, '[tokens:3] prime'); // steady state: measure the agent's second turn
      await settle(inst);
      const tag = `bench:${inst.key}-${uniq}-${r}`;
      const cpu0 = inst.cpu();
      const t0 = now();
      const t = await turn(c, prompt(tag));
      await settle(inst);
      const cpu = inst.cpu() - cpu0 - inst.idleCpuPerMs * (now() - t0);
      const timing = await timingOf(tag);
      res.cpuPerToken.push(cpu / opts.tokens);
      res.firstChunk.push(t.firstText - t.tSend);
      res.preModel.push(timing ? timing.receivedAt - t.tSend : NaN);
      res.firstChunkAfterModel.push(timing ? t.firstText - timing.firstContentAt : NaN);
      res.lastByteToDoneUnpaced.push(timing ? t.doneAt - timing.lastByteAt : NaN);
      res.turnMs.push(t.doneAt - t.tSend);
      // End-of-turn overhead needs a model the agent keeps up with (otherwise it measures the
      // backlog of unprocessed chunks): a short paced turn on the same agent.
      await settle(inst);
      const ptag = `bench:${inst.key}-${uniq}-${r}-paced`;
      const p = await turn(c, `[tokens:${opts.pacedTokens}] [delay:${opts.paceMs}] ${ptag}`);
      const ptiming = await timingOf(ptag);
      res.lastByteToDone.push(ptiming ? p.doneAt - ptiming.lastByteAt : NaN);
      drop(c);
    }
  }
  // Every rep streams the same tokens, so Σ CPU ÷ Σ tokens is the mean of the per-rep figures.
  for (const inst of pair) {
    const perRep = results[inst.key].cpuPerToken;
    results[inst.key].cpuPerTokenPooled = [perRep.reduce((a, b) => a + b, 0) / perRep.length];
  }
}

async function phaseSqlite(pair, opts, results, uniq) {
  for (let r = 0; r < opts.sqliteReps; r++) {
    for (const inst of orderFor(r, pair)) {
      const name = `sql-${uniq}-${r}`;
      const c = await openTab(inst, name);
      await turn(c, '[tokens:3] prime');
      await settle(inst);
      await sleep(100);
      const w = new WalWatcher(inst.walPath(name));
      w.start();
      await turn(c, `[tokens:${opts.tokens}] bench:sql-${inst.key}-${uniq}-${r}`);
      await settle(inst);
      await sleep(200);
      const s = w.stop();
      results[inst.key].sqlCommits.push(s.commits);
      results[inst.key].sqlWalKiB.push(s.walBytes / 1024);
      results[inst.key].sqlPages.push(s.frames);
      drop(c);
    }
  }
}

async function phaseFanout(pair, opts, results, uniq) {
  const reps = Math.max(2, Math.ceil(opts.reps / 2));
  for (let r = 0; r < reps; r++) {
    for (const inst of orderFor(r, pair)) {
      const name = `fan-${uniq}-${r}`;
      const first = await openTab(inst, name);
      const others = [];
      for (let i = 1; i < opts.tabs; i += 10) {
        others.push(...(await Promise.all(Array.from({ length: Math.min(10, opts.tabs - i) }, () => openListeningTab(inst, name)))));
      }
      await settle(inst);
      const { id, tSend, doneAt: firstDone } = await turn(first, `[tokens:${opts.fanoutTokens}] bench:fan-${inst.key}-${uniq}-${r}`);
      let timer;
      const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`fan-out: not every tab got the done frame of ${id} within 60 s`)), 60000);
      });
      const doneTimes = await Promise.race([Promise.all(others.map((tab) => tab.doneAt(id))), timeout]).finally(() => clearTimeout(timer));
      const last = Math.max(firstDone, ...doneTimes);
      results[inst.key].fanout.push(last - tSend);
      drop(first);
      others.forEach((tab) => drop(tab));
    }
  }
}

async function phaseConnect(pair, opts, results, uniq) {
  for (let r = 0; r < opts.connects; r++) {
    for (const inst of orderFor(r, pair)) {
      const c = await openTab(inst, `conn-${uniq}-${r}`);
      results[inst.key].connect.push(c.connectMs);
      results[inst.key].connectOpen.push(c.openMs);
      drop(c);
      await sleep(5);
    }
  }
}

/** Build `agents` agents with `history`-message transcripts on one instance; keep a tab open each. */
async function buildHistories(inst, opts, uniq) {
  const turnsPerAgent = Math.ceil(opts.history / 2);
  const tabs = [];
  const t0 = now();
  const batch = 10;
  for (let a = 0; a < opts.agents; a += batch) {
    const group = await Promise.all(Array.from({ length: Math.min(batch, opts.agents - a) }, (_, k) => openTab(inst, `mem-${uniq}-${a + k}`)));
    await Promise.all(group.map(async (c, k) => {
      for (let i = 0; i < turnsPerAgent; i++) await turn(c, `[tokens:40] agent ${a + k} message ${i}`);
    }));
    tabs.push(...group);
  }
  return { tabs, seconds: (now() - t0) / 1000, messages: tabs.reduce((s, t) => s + t.transcript.length, 0) / tabs.length };
}

/**
 * What the isolate holds live (MiB): the self sizes of every node of a V8 heap snapshot (taken
 * after the full GC the snapshot does), which include ArrayBuffer backing stores and so a wasm
 * instance's linear memory.
 */
async function liveHeapMiB(cdp) {
  const objects = await cdp.objects();
  if (!objects) return NaN;
  let bytes = 0;
  for (const { bytes: b } of objects.values()) bytes += b;
  return bytes / 1048576;
}

async function rssSettled(inst) {
  await settle(inst, 3000);
  await sleep(500);
  const samples = [];
  for (let i = 0; i < 5; i++) { samples.push(inst.rss()); await sleep(100); }
  return median(samples);
}

// ---- main ---------------------------------------------------------------------------------

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const started = now();
  const work = mkdtempSync(join(tmpdir(), 'durable-chat-bench-'));
  const log = (...a) => console.error(`[${((now() - started) / 1000).toFixed(1)}s]`, ...a);
  const cleanup = [];
  try {
    if (opts.build) {
      log('building our worker (flock', BUILD_LOCK, 'bash scripts/build.sh) …');
      execFileSync('flock', [BUILD_LOCK, 'bash', 'scripts/build.sh'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    }
    const ours = stageOurs(join(work, 'ours-build'));
    const thinkDist = ensureThinkBuilt();

    // Timing records of the model server, by the bench tag in the user text.
    const timings = new Map();
    const waiters = new Map();
    const model = await startModelServer({
      onTiming(rec) {
        const m = /bench:(\S+)/.exec(rec.lastUserText);
        if (!m) return;
        timings.set(m[1], rec);
        waiters.get(m[1])?.(rec);
      },
    });
    cleanup.push(() => model.close());
    const timingOf = (tag) => {
      const key = tag.replace(/^bench:/, '');
      if (timings.has(key)) return Promise.resolve(timings.get(key));
      return Promise.race([
        new Promise((resolve) => waiters.set(key, resolve)),
        sleep(2000).then(() => null),
      ]).finally(() => waiters.delete(key));
    };

    const specs = workerSpecs(ours, thinkDist);
    const newResults = () => ({
      cpuPerToken: [], cpuPerTokenPooled: [], firstChunk: [], preModel: [], loadWallMs: [], loadFirstChunk: [], memUploadPerAgentMiB: [], firstChunkAfterModel: [], lastByteToDone: [], lastByteToDoneUnpaced: [], turnMs: [],
      sqlCommits: [], sqlWalKiB: [], sqlPages: [], fanout: [], connect: [], connectOpen: [],
      memPerAgentMiB: [], rssBaseMiB: [], rssAfterMiB: [], liveHeapPerAgentKiB: [], historySeconds: [],
      histShortTurn: [], histLongTurn: [], histTurnEndFrameKiB: [], histConnect: [], histConnectFrameKiB: [], histHeapShortKiB: [], histHeapLongKiB: [],
      cacheShare: [], cacheInputTokens: [], cacheCalls: [], cacheLastRequestTokens: [],
    });
    const results = { ours: newResults(), think: newResults(), floor: newResults() };
    const loads = [];
    const uniq = nanoid8();

    // Phases 1-4 and the load phase on one instance per worker (the floor worker beside ours and
    // Think); the history phase on ours and Think only.
    log('starting workers …');
    const trio = [];
    for (const key of ['ours', 'think', 'floor']) {
      const inst = await startInstance(specs[key], { modelUrl: model.url, persistDir: join(work, `${key}-do`) });
      cleanup.push(() => inst.close());
      trio.push(inst);
    }
    const pair = trio.slice(0, 2);
    log(`workers up: ${trio.map((i) => `${i.key} pid ${i.pids.join(',')}`).join(', ')}`);

    /** Runs one phase (when selected with --phases) and records the load during it. */
    const runPhase = async (key, name, instances, body) => {
      if (!opts.phases.has(key)) return;
      const load = new PhaseLoad(name, instances);
      log(`phase: ${load.name}`);
      await body();
      loads.push(load.end());
    };
    await runPhase('turns', `turns (${opts.tokens}-token turns ×${opts.reps})`, trio, () => phaseTurns(trio, opts, timingOf, results, uniq));
    await runPhase('sqlite', `sqlite (${opts.tokens}-token turns ×${opts.sqliteReps})`, trio, () => phaseSqlite(trio, opts, results, uniq));
    await runPhase('fanout', `fan-out (${opts.tabs} tabs, ${opts.fanoutTokens}-token turn)`, trio, () => phaseFanout(trio, opts, results, uniq));
    await runPhase('connect', `connect (fresh agent ×${opts.connects})`, trio, () => phaseConnect(trio, opts, results, uniq));
    await runPhase('load', `load (${opts.loadAgents} agents × ${opts.loadTokens} tokens at once ×${opts.loadReps})`, trio, () => phaseLoad({ openTab, turn, drop, settle, orderFor }, trio, opts, results, uniq));
    const kit = {
      openTab, settle, orderFor, drop, freePort, inspect, liveHeapMiB, startInstance, specs,
      modelUrl: model.url, persistDir: (name) => join(work, name), startModelServer,
    };
    await runPhase('history', `history turns and connects (×${opts.historyReps})`, pair, () => phaseHistoryTurns(kit, pair, opts, results, uniq, log));

    for (const inst of trio) await inst.close();

    // Phase 5: memory, on fresh processes that never evict (so all agents stay resident), one
    // worker at a time, once per mode (histories built by turns; posted in one request each).
    for (const mode of opts.memoryModes) {
      const memInstances = [];
      if (opts.phases.has('memory')) {
        for (const key of ['ours', 'think', 'floor']) {
          const inspectorPort = await freePort();
          const inst = await startInstance(specs[key], { modelUrl: model.url, persistDir: join(work, `${key}-mem-${mode}-do`), preventEviction: true, miniflare: { inspectorPort } });
          inst.inspectorPort = inspectorPort;
          cleanup.push(() => inst.close());
          memInstances.push(inst);
        }
      }
      const memTabs = [];
      await runPhase('memory', `memory, ${mode} (${opts.agents} agents × ${opts.history} messages)`, memInstances, async () => {
        for (const inst of memInstances) {
          const cdp = await inspect(inst.inspectorPort);
          const warm = await openTab(inst, `memwarm-${uniq}`);
          // The baseline is taken once the worker's code is warm (its hot functions compiled by
          // the optimising tier): what compiling costs is paid once per process, not per agent,
          // and a worker doing less work per turn would otherwise pay it during the agents.
          for (let i = 0; i < opts.memoryWarmTurns; i++) await turn(warm, `[tokens:40] warm ${i}`);
          memTabs.push(warm);
          const base = await rssSettled(inst);
          const heapBase = await liveHeapMiB(cdp);
          const built = mode === 'upload'
            ? await uploadHistories({ openTab, turn }, inst, opts, uniq)
            : await buildHistories(inst, opts, uniq);
          memTabs.push(...built.tabs);
          const after = await rssSettled(inst);
          const heapAfter = await liveHeapMiB(cdp);
          cdp.close();
          const r = results[inst.key];
          if (mode === 'upload') {
            r.memUploadPerAgentMiB.push((after - base) / 1024 / opts.agents);
          } else {
            r.rssBaseMiB.push(base / 1024);
            r.rssAfterMiB.push(after / 1024);
            r.memPerAgentMiB.push((after - base) / 1024 / opts.agents);
            r.liveHeapPerAgentKiB.push(((heapAfter - heapBase) * 1024) / opts.agents);
            r.historySeconds.push(built.seconds);
            r.historyMessages = built.messages;
          }
          log(`  ${inst.key} (${mode}): RSS ${(base / 1024).toFixed(1)} → ${(after / 1024).toFixed(1)} MiB, live heap ${heapBase.toFixed(1)} → ${heapAfter.toFixed(1)} MiB, histories in ${built.seconds.toFixed(1)} s (avg ${built.messages.toFixed(1)} msgs)`);
        }
      });
      memTabs.forEach(drop);
      for (const inst of memInstances) await inst.close();
    }
    await runPhase('history', `history memory (${opts.historyAgents} agents per size)`, [], () => phaseHistoryMemory(kit, opts, results, uniq, log));
    await runPhase('cache', `cache (${opts.cacheTurns}-turn chat, caching model)`, [], () => phaseCache(kit, opts, results, uniq, log));

    // Sizes.
    const wasmBytes = readFileSync(ours.wasm);
    const thinkBytes = readFileSync(thinkDist);
    const sizes = {
      oursWasmKiB: wasmBytes.length / 1024,
      oursWasmGzKiB: gzipSync(wasmBytes).length / 1024,
      oursJsKiB: statSync(join(ours.dir, 'index.js')).size / 1024,
      thinkBundleKiB: thinkBytes.length / 1024,
      thinkBundleGzKiB: gzipSync(thinkBytes).length / 1024,
    };

    report(opts, results, loads, sizes, { ours, elapsed: (now() - started) / 1000 });
  } finally {
    for (const f of cleanup.reverse()) await Promise.resolve().then(f).catch(() => {});
    rmSync(work, { recursive: true, force: true });
  }
}

function report(opts, results, loads, sizes, { ours, elapsed }) {
  const o = results.ours;
  const t = results.think;
  const f = results.floor;
  const rows = [
    [`runtime CPU per streamed token (ms)`, o.cpuPerToken, t.cpuPerToken, f.cpuPerToken],
    [`  pooled: Σ CPU of the reps / Σ their tokens (ms)`, o.cpuPerTokenPooled, t.cpuPerTokenPooled, f.cpuPerTokenPooled],
    [`  idle CPU subtracted, measured after the warm-up (ms per s)`, o.idleCpuMsPerS, t.idleCpuMsPerS, f.idleCpuMsPerS],
    [`request → first text chunk (ms)`, o.firstChunk, t.firstChunk, f.firstChunk],
    [`  of which before the model is called (ms)`, o.preModel, t.preModel, f.preModel],
    [`  of which after the model's first word (ms)`, o.firstChunkAfterModel, t.firstChunkAfterModel, f.firstChunkAfterModel],
    [`model's last byte → terminal done frame (ms)`, o.lastByteToDone, t.lastByteToDone, f.lastByteToDone],
    [`whole ${opts.tokens}-token turn, request → done (ms)`, o.turnMs, t.turnMs, f.turnMs],
    [`  its model's last byte → done (backlog, ms)`, o.lastByteToDoneUnpaced, t.lastByteToDoneUnpaced, f.lastByteToDoneUnpaced],
    [`${opts.tabs}-tab fan-out, ${opts.fanoutTokens}-token turn → last tab done (ms)`, o.fanout, t.fanout, f.fanout],
    [`${opts.loadAgents} agents × ${opts.loadTokens} tokens at once: wall time (ms)`, o.loadWallMs, t.loadWallMs, f.loadWallMs],
    [`  same: request → first text chunk per agent (ms)`, o.loadFirstChunk, t.loadFirstChunk, f.loadFirstChunk],
    [`SQLite write transactions per ${opts.tokens}-token turn`, o.sqlCommits, t.sqlCommits, f.sqlCommits],
    [`SQLite WAL bytes written per ${opts.tokens}-token turn (KiB)`, o.sqlWalKiB, t.sqlWalKiB, f.sqlWalKiB],
    [`runtime memory per agent, ${opts.history}-message history built by turns (MiB)`, o.memPerAgentMiB, t.memPerAgentMiB, f.memPerAgentMiB],
    [`runtime memory per agent, ${opts.history} messages posted in one request (MiB)`, o.memUploadPerAgentMiB, t.memUploadPerAgentMiB, f.memUploadPerAgentMiB],
    [`runtime RSS with ${opts.agents} agents (MiB)`, o.rssAfterMiB, t.rssAfterMiB, f.rssAfterMiB],
    [`  isolate's live heap per agent (heap snapshot, KiB)`, o.liveHeapPerAgentKiB, t.liveHeapPerAgentKiB, f.liveHeapPerAgentKiB],
    [`fresh-agent connect on a warm process → ready (ms)`, o.connect, t.connect, f.connect],
    [`  of which WebSocket open (ms)`, o.connectOpen, t.connectOpen, f.connectOpen],
    ...historyRows(o, t, opts.historyLong),
    ...cacheRows(o, t, opts),
    [`worker code size (KiB; ours = wasm, think = JS bundle)`, [sizes.oursWasmKiB], [sizes.thinkBundleKiB]],
    [`worker code size gzip (KiB)`, [sizes.oursWasmGzKiB], [sizes.thinkBundleGzKiB]],
  ];
  const head = ['metric', 'ours median / p90', 'think median / p90', 'floor median / p90', 'ours/think', 'ours/floor'];
  const cell = (xs) => (xs?.length > 1 ? `${fmt(median(xs))} / ${fmt(p90(xs))}` : xs?.length ? fmt(xs[0]) : '-');
  const ratio = (a, b) => {
    const x = median(a ?? []) / median(b ?? []);
    return Number.isFinite(x) ? x.toFixed(2) : '-';
  };
  const table = rows.map(([name, a, b, c]) => [name, cell(a), cell(b), cell(c), ratio(a, b), ratio(a, c)]);
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  const out = [];
  out.push('');
  out.push(`durable-chat benchmark — ${new Date().toISOString()} — ${opts.quick ? 'quick' : 'full'} run, ${elapsed.toFixed(0)} s`);
  out.push(`settings: tokens=${opts.tokens} reps=${opts.reps} (sqlite reps=${opts.sqliteReps}) tabs=${opts.tabs} agents=${opts.agents} history=${opts.history} connects=${opts.connects} cache-turns=${opts.cacheTurns}; ` +
    `ours = build/index_bg.wasm of ${ours.mtime.toISOString()}; runtime: miniflare ${pkgVersion('miniflare')} / workerd ${pkgVersion('workerd')}; node ${process.version}; ${cpuInfo()}`);
  out.push('');
  out.push(line(head));
  out.push(`|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|')}|`);
  for (const r of table) out.push(line(r));
  const ratioTargets = targetLines(results, median);
  if (ratioTargets.length) {
    out.push('');
    out.push('targets (medians of this run):');
    out.push(...ratioTargets);
  }
  const targets = historyTargets(o, t, median, opts.historyLong);
  if (targets.length) {
    out.push('');
    out.push(`history targets (medians of this run; the long agent stores ${o.historyStored ?? '-'} messages here, ${t.historyStored ?? '-'} in Think):`);
    out.push(...targets);
  }
  const cacheLines = cacheTargets(o, opts);
  if (cacheLines.length) {
    out.push('');
    out.push('cache target (this run):');
    out.push(...cacheLines);
  }
  out.push('');
  out.push('load during each phase (cores busy, averaged over the phase; "other" = whole machine minus the phase\'s workerd processes minus this benchmark process):');
  for (const l of loads) {
    out.push(`  ${l.phase.padEnd(44)} ${l.wallS.toFixed(1).padStart(6)} s  workerd ${l.workerdCores.toFixed(2)}  bench node ${l.benchNodeCores.toFixed(2)}  other processes ${l.otherCores.toFixed(2)}  loadavg(1m) ${l.load1.toFixed(2)}`);
  }
  out.push('');
  out.push('method:');
  out.push('  CPU/token: time on CPU of every thread of the worker\'s own workerd process (/proc/<pid>/task/<tid>/schedstat, ns) from just before the request until its CPU clock is still again after the terminal frame (< 1 ms in each of three 20 ms samples), minus the process\'s idle rate (measured after the warm-up turns) over the same time, divided by the streamed tokens; each agent\'s 2nd turn (the 1st is a 3-token priming turn). The pooled row (the CPU of every rep summed, over every rep\'s tokens) is the figure the targets use.');
  out.push(`  CPU/token, first chunk, whole turn: the model streams the ${opts.tokens} words as fast as it can (no delay), as do the SQLite and fan-out turns.`);
  out.push('  first chunk: client send → receipt of the first text-delta frame; "after the model\'s first word" subtracts the model server\'s write time of its first content word (timing hook, same clock).');
  out.push(`  last byte → done: the model server\'s last response byte handed to the OS (\'finish\') → receipt of the done:true frame, on a paced ${opts.pacedTokens}-token turn (${opts.paceMs} ms between words) so the agent keeps up with the model; the unpaced ${opts.tokens}-token turn's figure (backlog row) also contains the chunks still queued when the model finished.`);
  out.push('  fan-out: N tabs of one fresh agent connected and idle; tab 1 sends; time until the last tab has the done:true frame. The N-1 listening tabs only look for terminal frames (substring test), so the client is not the bottleneck.');
  out.push('  SQLite: the DO\'s <id>.sqlite-wal in the Miniflare persist dir is polled every ~1 ms during the turn; each WAL frame = one page written (24-byte header + page), a frame with a non-zero "db size after commit" field ends one write transaction; checkpoint restarts (new salts) are followed. Bytes = frames × (24 + page size).');
  out.push(`  memory: fresh pair of processes with eviction disabled; RSS (VmRSS of workerd) after one warm agent (${opts.memoryWarmTurns} turns of 40 tokens, so the worker's hot code is compiled before the baseline) vs. after N agents each with a ~H-message transcript built by real turns (40-token replies) and one open tab; difference / N. Live heap: the summed self sizes of a V8 heap snapshot over the inspector (after its full GC; ArrayBuffer backing stores included, so ours counts its wasm linear memory), same points, difference / N. The three workers run one after another, each in its own fresh process.`);
  out.push('  connect: new socket (with _pk) to a never-used agent name on a warm process → socket open, transcript frame, identity frame and the answer to the resume probe all received.');
  out.push('  sizes: ours = build/index_bg.wasm (the JS shim is ' + sizes.oursJsKiB.toFixed(0) + ' KiB more); think = the esbuild bundle bench/think-worker/dist/index.js (unminified, as wrangler deploys it by default).');
  console.log(out.join('\n'));
  if (opts.json) writeFileSync(opts.json, JSON.stringify({ opts, results, loads, sizes, date: new Date().toISOString() }, null, 2));
}

function pkgVersion(name) {
  try {
    const p = name === 'workerd' ? join(ROOT, 'node_modules', 'workerd', 'package.json') : join(ROOT, 'node_modules', name, 'package.json');
    return JSON.parse(readFileSync(p, 'utf8')).version;
  } catch {
    return '?';
  }
}

function cpuInfo() {
  try {
    const txt = readFileSync('/proc/cpuinfo', 'utf8');
    const m = /model name\s*:\s*(.+)/.exec(txt);
    const n = (txt.match(/^processor\s*:/gm) || []).length;
    return `${n} CPU${n === 1 ? '' : 's'}${m ? ` (${m[1].trim()})` : ''}`;
  } catch {
    return '';
  }
}

// Helpers shared with bench/profile.mjs.
export {
  ROOT, THINK_DIR, stageOurs, ensureThinkBuilt, startInstance, openTab, turn, drop, settle, WalWatcher,
  nanoid8, median, fmt, sleep, now,
};

export function workerSpecs(ours, thinkDist) {
  return {
    ours: {
      key: 'ours', label: 'ours (Rust/wasm ChatAgent)', binding: 'ChatAgent', className: 'ChatAgent',
      modules: [
        { type: 'ESModule', path: join(ours.dir, 'index.js') },
        { type: 'CompiledWasm', path: join(ours.dir, 'index_bg.wasm') },
      ],
      modulesRoot: ours.dir,
      compatibilityFlags: [],
    },
    think: {
      key: 'think', label: 'think (@cloudflare/think 0.23.0 ThinkAgent)', binding: 'ThinkAgent', className: 'ThinkAgent',
      modules: [{ type: 'ESModule', path: thinkDist }],
      modulesRoot: join(THINK_DIR, 'dist'),
      compatibilityFlags: ['nodejs_compat'],
    },
    // The runtime's floor (memory phase only): the least a JS chat DO can do for the same client.
    floor: {
      key: 'floor', label: 'floor (bench/floor-worker, minimal JS chat DO)', binding: 'FloorAgent', className: 'FloorAgent',
      modules: [{ type: 'ESModule', path: join(FLOOR_DIR, 'index.js') }],
      modulesRoot: FLOOR_DIR,
      compatibilityFlags: [],
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    console.error(err?.stack || String(err));
    process.exit(1);
  });
}

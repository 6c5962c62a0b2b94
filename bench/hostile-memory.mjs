#!/usr/bin/env node
// What hostile inputs cost our agent in memory (companion of bench/memory-probe.mjs; same workers,
// model server and client). For each scenario, on a fresh workerd process with eviction disabled:
// one agent warmed with 3 turns, then the scenario's inputs sent from one tab, then a normal turn on
// the same socket (it must still work). Prints the workerd process's resident memory (VmRSS) and the
// agent's wasm linear memory (GET …/__debug/memory: the test build, bash scripts/build.sh --test,
// with DEBUG_MEMORY=1) before and after.
//
//   node bench/hostile-memory.mjs [--scenarios unknown,rpc,state,body,messages,history,state-values,
//        call-values,split-read,ws-30mib,mcp-tiny,mcp-spec] [--ours-dir DIR] [--history-mb 24]
//        [--split-mb 12] [--json FILE]
//
// unknown: four 3.9 MiB frames of a type nobody handles, `[0,0,…]` inside.
// rpc:     four 3.9 MiB `rpc` calls of the demo's `echo` with `[0,0,…]` arguments.
// state:   four 3.9 MiB `cf_agent_state` frames.
// body:    four chat requests whose custom body carries 3 MiB of `[0,0,…]`.
// messages: four 3.9 MiB chat requests whose message carries `[0,0,…]` in a data part.
// history: a history grown to --history-mb by tail requests of ~830 KB each (figures after the
//          growth), then three GET …/get-messages (figures after the reads).
// state-values: one 1.9 MB `cf_agent_state` frame holding ~950k zeros (under the byte limit).
// call-values: eight `rpc` calls of the demo's `setStateField`, 240 KB of zeros each, own keys.
// split-read: one message split over pieces (1 MB of text, three ~0.9 MB `data:` images), then
//          as `history` grown to --split-mb, then three get-messages.
// ws-30mib: one 30 MiB WebSocket message (a chat request padded past the 4 MiB frame limit).
// mcp-tiny: an MCP server added at run time whose `tools/list` is ~4 MiB of tiny values
//          (tests/support/mcp-server.mjs, `hostile: 'tiny-values'`).
// mcp-spec: an MCP server added at run time that lists a tool whose spec is 3 MiB
//          (`hostile: 'huge-spec'`).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startModelServer } from '../tests/support/model-server.mjs';
import { chatRequest, userMessage } from '../tests/support/harness.mjs';
import { startMcpServer } from '../tests/support/mcp-server.mjs';
import {
  drop, fmt, median, nanoid8, openTab, settle, sleep, stageOurs, startInstance, turn, workerSpecs,
} from './run.mjs';

const MiB = 1024 * 1024;

function args() {
  const a = process.argv.slice(2);
  const o = {
    scenarios: 'unknown,rpc,state,body,messages,history,state-values,call-values,split-read,ws-30mib,mcp-tiny,mcp-spec',
    'ours-dir': '', 'history-mb': 24, 'split-mb': 12, json: '',
  };
  for (let i = 0; i < a.length; i++) {
    const k = a[i].replace(/^--/, '');
    if (!(k in o)) throw new Error(`unknown option ${a[i]}`);
    o[k] = typeof o[k] === 'number' ? Number(a[++i]) : a[++i];
  }
  return o;
}

/** `[0,0,…]` of about `bytes` bytes. */
function zeros(bytes) {
  return `[${'0,'.repeat(Math.floor(bytes / 2) - 1)}0]`;
}

async function wasmMemory(inst, name) {
  const r = await fetch(`${inst.url}/agents/chat-agent/${name}/__debug/memory`);
  if (!r.ok) throw new Error(`__debug/memory → ${r.status}: use the test build (bash scripts/build.sh --test)`);
  return (await r.json()).wasmMemoryBytes;
}

async function measure(inst, name) {
  await settle(inst, 3000);
  await sleep(300);
  const rss = [];
  for (let i = 0; i < 5; i++) { rss.push(inst.rss()); await sleep(100); }
  return { rssMiB: median(rss) / 1024, wasmMiB: (await wasmMemory(inst, name)) / MiB };
}

/** Waits until `pred` matches a frame received after `mark`; returns it. */
async function frameAfter(c, mark, pred, timeoutMs = 60000) {
  c.cursor = mark;
  return c.waitFor(pred, timeoutMs);
}

/** Sends `count` (four) chat requests `<prefix>0`, `<prefix>1`, … whose body holds `fields()` (with
 * `"@@"` standing for `[0,0,…]` of `bytes`) and waits for each one's terminal frame; prints the first. */
async function fourChatRequests(c, prefix, fields, bytes, count = 4) {
  for (let i = 0; i < count; i++) {
    const id = `${prefix}${i}`;
    const mark = c.frames.length;
    const body = JSON.stringify({ ...fields(), trigger: 'submit-message' });
    const frame = JSON.stringify({ id, init: { method: 'POST', body }, type: 'cf_agent_use_chat_request' })
      .replace('\\"@@\\"', zeros(bytes));
    c.ws.send(frame);
    const end = await frameAfter(c, mark, (f) => f?.type === 'cf_agent_use_chat_response' && f.id === id && f.done);
    if (i === 0) console.log(`    reply: ${JSON.stringify(end).slice(0, 200)}`);
  }
}

const scenarios = {
  async unknown(c) {
    for (let i = 0; i < 4; i++) c.ws.send(`{"type":"hostile","data":${zeros(3.9 * MiB)}}`);
    return 'four 3.9 MiB frames of an unknown type';
  },
  async rpc(c) {
    for (let i = 0; i < 4; i++) {
      const mark = c.frames.length;
      c.ws.send(`{"type":"rpc","id":"h${i}","method":"echo","args":[${zeros(3.9 * MiB)}]}`);
      const reply = await frameAfter(c, mark, (f) => f?.type === 'rpc' && f.id === `h${i}`);
      if (i === 0) console.log(`    reply: ${JSON.stringify(reply).slice(0, 160)}`);
    }
    return 'four 3.9 MiB rpc calls';
  },
  async state(c) {
    for (let i = 0; i < 4; i++) {
      const mark = c.frames.length;
      c.ws.send(`{"type":"cf_agent_state","state":{"junk":${zeros(3.9 * MiB)}}}`);
      const reply = await frameAfter(c, mark, (f) => f?.type === 'cf_agent_state_error' || f?.type === 'cf_agent_state', 60000);
      if (i === 0) console.log(`    reply: ${JSON.stringify(reply).slice(0, 160)}`);
    }
    return 'four 3.9 MiB state frames';
  },
  async body(c) {
    await fourChatRequests(c, 'b', () => ({ messages: [userMessage(nanoid8(), 'hi')], junk: '@@' }), 3 * MiB);
    return 'four chat requests with 3 MiB custom bodies';
  },
  async messages(c) {
    const message = () => ({ id: nanoid8(), role: 'user', parts: [{ type: 'text', text: 'hi' }, { type: 'data-junk', data: '@@' }] });
    await fourChatRequests(c, 'm', () => ({ messages: [message()] }), 3.9 * MiB);
    return 'four 3.9 MiB chat requests of tiny values in their messages';
  },
  async 'state-values'(c) {
    const mark = c.frames.length;
    c.ws.send(`{"type":"cf_agent_state","state":{"zeros":${zeros(1.9e6)}}}`);
    // An accepted state is not echoed to its sender: a call after it marks that it was handled.
    c.ws.send('{"type":"rpc","id":"after-state","method":"echo","args":[1]}');
    await frameAfter(c, mark, (f) => f?.type === 'rpc' && f.id === 'after-state', 120000);
    const reply = c.frames.slice(mark).find((f) => f?.type === 'cf_agent_state_error');
    console.log(`    reply: ${reply ? JSON.stringify(reply).slice(0, 160) : 'none (the state was taken)'}`);
    return 'one 1.9 MB state frame of ~950k zeros';
  },
  async 'call-values'(c) {
    for (let i = 0; i < 8; i++) {
      const mark = c.frames.length;
      c.ws.send(`{"type":"rpc","id":"s${i}","method":"setStateField","args":["k${i}",${zeros(240_000)}]}`);
      const reply = await frameAfter(c, mark, (f) => f?.type === 'rpc' && f.id === `s${i}`);
      if (i === 0) console.log(`    reply: ${JSON.stringify(reply).slice(0, 160)}`);
    }
    return 'eight setStateField calls of 240 KB of zeros';
  },
  async 'ws-30mib'(c) {
    await fourChatRequests(c, 'w', () => ({ messages: [userMessage(nanoid8(), 'hi')], pad: '@@' }), 30 * MiB, 1);
    return 'one 30 MiB WebSocket message';
  },
};

/** Scenarios of a hostile MCP server: added to the agent at run time, then its state frame awaited. */
const mcpScenarios = {
  'mcp-tiny': { hostile: 'tiny-values', what: 'an MCP server whose tools/list is ~4 MiB of tiny values' },
  'mcp-spec': { hostile: 'huge-spec', what: 'an MCP server listing a tool whose spec is 3 MiB' },
};

async function mcpScenario(inst, c, name, scenario) {
  const { hostile, what } = mcpScenarios[scenario];
  const server = await startMcpServer({ hostile });
  try {
    const mark = c.frames.length;
    const added = await fetch(`${inst.url}/agents/chat-agent/${name}/mcp-servers`, {
      method: 'POST', headers: { authorization: 'Bearer bench-admin', 'content-type': 'application/json' }, body: JSON.stringify({ name: 'hostile', url: server.url }),
    });
    console.log(`    POST …/mcp-servers → ${added.status}`);
    const settled = (f) => f?.type === 'cf_agent_mcp_servers' && ['ready', 'failed'].includes(f.mcp?.servers?.hostile?.state);
    const frame = await frameAfter(c, mark, settled, 60000);
    const { state, error } = frame.mcp.servers.hostile;
    console.log(`    server ${state}${error ? `: ${error.slice(0, 160)}` : ''}; tools offered: ${frame.mcp.tools.map((t) => t.name).join(', ') || 'none'}`);
    return what;
  } finally {
    await server.close();
  }
}

/** A user message split over stored pieces: 1 MB of text and three ~0.9 MB `data:` images. */
function splitMessage() {
  const image = `data:image/png;base64,${Buffer.alloc(675_000).toString('base64')}`;
  const files = [0, 1, 2].map(() => ({ type: 'file', mediaType: 'image/png', url: image }));
  return { id: nanoid8(), role: 'user', parts: [{ type: 'text', text: `[tokens:5] ${'s'.repeat(1e6)}` }, ...files] };
}

async function history(inst, c, name, mb, first) {
  const text = 'x'.repeat(830_000);
  const turns = Math.ceil((mb * 1e6) / 830_000);
  for (let i = first ? -1 : 0; i < turns; i++) {
    const id = nanoid8();
    const mark = c.frames.length;
    const message = i < 0 ? first : userMessage(nanoid8(), `[tokens:5] ${i} ${text}`);
    c.send(chatRequest(id, [message]));
    const end = await frameAfter(c, mark, (f) => f?.type === 'cf_agent_use_chat_response' && f.id === id && f.done, 120000);
    if (end.error) throw new Error(`tail request ${i} failed: ${end.body}`);
  }
  const grown = await measure(inst, name);
  const reads = [];
  for (let i = 0; i < 3; i++) {
    const t0 = Date.now();
    const r = await fetch(`${inst.url}/agents/chat-agent/${name}/get-messages`);
    const body = await r.text();
    reads.push({ status: r.status, bytes: body.length, ms: Date.now() - t0 });
  }
  const read = await measure(inst, name);
  return { grown, read, reads, turns };
}

async function main() {
  const o = args();
  const work = mkdtempSync(join(tmpdir(), 'durable-chat-hostile-'));
  const ours = o['ours-dir'] ? { dir: o['ours-dir'] } : stageOurs(join(work, 'ours-build'));
  const spec = workerSpecs(ours, '').ours;
  const model = await startModelServer();
  const results = [];
  try {
    for (const scenario of o.scenarios.split(',')) {
      const inst = await startInstance(spec, {
        modelUrl: model.url, persistDir: join(work, scenario), preventEviction: true,
        miniflare: { bindings: { OPENAI_BASE_URL: model.url, OPENAI_API_KEY: 'bench-key', MODEL: 'scripted-model', MESSAGE_CONCURRENCY: 'queue', DEBUG_MEMORY: '1', MCP_ADMIN_TOKEN: 'bench-admin' } },
      });
      const name = `hostile-${scenario}`;
      let c;
      try {
        c = await openTab(inst, name);
        for (let i = 0; i < 3; i++) await turn(c, `[tokens:40] warm ${i}`);
        const before = await measure(inst, name);
        console.log(`\n=== ${scenario}`);
        const row = { scenario, before };
        if (scenario === 'history' || scenario === 'split-read') {
          const split = scenario === 'split-read';
          const h = await history(inst, c, name, o[split ? 'split-mb' : 'history-mb'], split && splitMessage());
          Object.assign(row, h);
          console.log(`  grew the history by ${split ? 'one message split over pieces and ' : ''}${h.turns} tail requests of ~830 KB`);
          console.log(`  RSS ${fmt(before.rssMiB)} → ${fmt(h.grown.rssMiB)} MiB (+${fmt(h.grown.rssMiB - before.rssMiB)}); wasm ${fmt(before.wasmMiB)} → ${fmt(h.grown.wasmMiB)} MiB (+${fmt(h.grown.wasmMiB - before.wasmMiB)})`);
          console.log(`  three get-messages: ${h.reads.map((r) => `${r.status} ${fmt(r.bytes / 1e6)} MB in ${r.ms} ms`).join('; ')}`);
          console.log(`  after the reads: RSS ${fmt(h.read.rssMiB)} MiB (+${fmt(h.read.rssMiB - h.grown.rssMiB)}); wasm ${fmt(h.read.wasmMiB)} MiB (+${fmt(h.read.wasmMiB - h.grown.wasmMiB)})`);
        } else if (mcpScenarios[scenario]) {
          row.what = await mcpScenario(inst, c, name, scenario);
          console.log(`  ${row.what}`);
        } else {
          row.what = await scenarios[scenario](c);
          console.log(`  ${row.what}`);
        }
        const open = c.ws.readyState === 1;
        const next = open ? await turn(c, '[tokens:10] still fine?').then(() => 'ok', (e) => String(e.message)) : 'socket closed';
        const after = await measure(inst, name);
        Object.assign(row, { after, socketOpen: open, nextTurn: next });
        const base = row.grown ?? before;
        console.log(`  RSS ${fmt(base.rssMiB)} → ${fmt(after.rssMiB)} MiB (+${fmt(after.rssMiB - base.rssMiB)}); wasm linear memory ${fmt(base.wasmMiB)} → ${fmt(after.wasmMiB)} MiB (+${fmt(after.wasmMiB - base.wasmMiB)})`);
        console.log(`  socket open afterwards: ${open}; next turn: ${next}`);
        results.push(row);
      } finally {
        if (c) drop(c);
        await inst.close();
      }
    }
  } finally {
    await model.close();
    rmSync(work, { recursive: true, force: true });
  }
  if (o.json) writeFileSync(o.json, JSON.stringify(results, null, 2));
}

main().catch((err) => { console.error(err?.stack || String(err)); process.exit(1); });

// A Chrome DevTools Protocol client for a workerd process started with an inspector port:
// forced garbage collection, V8 heap usage and a heap snapshot summarised by object kind.
// Used by bench/run.mjs (live heap per agent) and bench/memory-probe.mjs.

import { createServer } from 'node:net';
import WebSocket from 'ws';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A free TCP port on 127.0.0.1 (for Miniflare's inspectorPort). */
export const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

/**
 * Connect to the user worker's inspector target. Returns { call(method, params?, timeoutMs?), gc(),
 * heap(), objects(), close() }:
 * heap() → { used, total (MiB), raw (Runtime.getHeapUsage) }; objects() → Map "type:name" →
 * { bytes, count } of a heap snapshot.
 */
export async function inspect(port) {
  let targets = [];
  for (let i = 0; i < 50 && !targets.length; i++) {
    try { targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json(); } catch { await sleep(100); }
  }
  const target = targets.find((t) => /core:user/.test(t.webSocketDebuggerUrl ?? t.id ?? '')) ?? targets[0];
  if (!target) throw new Error(`no inspector target on port ${port}`);
  const ws = new WebSocket(target.webSocketDebuggerUrl ?? `ws://127.0.0.1:${port}/${target.id}`);
  await new Promise((r, j) => { ws.once('open', r); ws.once('error', j); });
  let next = 1;
  const pending = new Map();
  let chunks = [];
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    if (m.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.push(m.params.chunk);
    const waiter = m.id && pending.get(m.id);
    if (!waiter) return;
    pending.delete(m.id);
    if (m.error) waiter.reject(new Error(`${waiter.method}: ${JSON.stringify(m.error)}`));
    else waiter.resolve(m.result ?? null);
  });
  /** One CDP command; rejects on an error answer or after `timeoutMs`. */
  const call = (method, params = {}, timeoutMs = 30000) => new Promise((resolve, reject) => {
    const id = next++;
    const timer = setTimeout(() => {
      if (pending.delete(id)) reject(new Error(`${method}: no answer in ${timeoutMs} ms`));
    }, timeoutMs);
    const settle = (fn) => (value) => { clearTimeout(timer); fn(value); };
    pending.set(id, { method, resolve: settle(resolve), reject: settle(reject) });
    ws.send(JSON.stringify({ id, method, params }));
  });
  const send = (method, params = {}) => call(method, params).catch(() => null);
  await send('HeapProfiler.enable');
  return {
    call,
    async gc() { await send('HeapProfiler.collectGarbage'); },
    async heap() {
      const h = await send('Runtime.getHeapUsage');
      return h ? { used: h.usedSize / 1048576, total: h.totalSize / 1048576, raw: h } : null;
    },
    /** A heap snapshot, parsed (null when none came). */
    async snapshot() {
      chunks = [];
      const done = await send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      if (!done && !chunks.length) return null;
      const snap = JSON.parse(chunks.join(''));
      chunks = [];
      return snap;
    },
    /** Self size (bytes) and count of live JS heap objects per "type:name" (a heap snapshot). */
    async objects() {
      const snap = await this.snapshot();
      if (!snap) return null;
      const f = snap.snapshot.meta.node_fields;
      const types = snap.snapshot.meta.node_types[0];
      const [ti, ni, si] = ['type', 'name', 'self_size'].map((k) => f.indexOf(k));
      const out = new Map();
      for (let i = 0; i < snap.nodes.length; i += f.length) {
        const type = types[snap.nodes[i + ti]];
        const name = type === 'string' || type === 'concatenated string' || type === 'sliced string' ? '' : String(snap.strings[snap.nodes[i + ni]]).slice(0, 60);
        const key = `${type}:${name}`;
        const e = out.get(key) ?? { bytes: 0, count: 0 };
        e.bytes += snap.nodes[i + si];
        e.count += 1;
        out.set(key, e);
      }
      return out;
    },
    close: () => ws.close(),
  };
}

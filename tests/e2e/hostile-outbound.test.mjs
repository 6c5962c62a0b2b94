// What the agent reads back from servers it calls, and the HTTP bodies it is sent, made hostile,
// against the built worker (the test build, DEBUG_MEMORY=1: the agent's wasm linear memory, which
// never shrinks, is the high-water mark of what it held) under Miniflare, with real sockets:
// an MCP server answering `tools/list` with ~4 MiB of tiny values (refused unbuilt, the server
// failed with the reason, the good server's tools kept), one listing a 3 MiB tool spec (that tool
// left out and named in the server's status, the others offered), an HTTP+SSE server flooding its
// event stream (closed past its bytes, the server failed with the reason), a model provider
// answering with a 20 MB error body (read only to its start), and a 20 MB body sent to every route
// the demo and the crate serve (413 before it is read, nothing stored). After each, the socket is
// open and the agent answers the next turn.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { getMessages, ADMIN } from '../support/harness.mjs';
import { rid, waitUntil, offeredTools } from '../support/e2e.mjs';
import { warmedTab, wasmMiB, turn } from '../support/memory.mjs';
import { startMcpServer } from '../support/mcp-server.mjs';

const MiB = 1024 * 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * POSTs `bytes` zeros (declared in `content-length`, or chunked without one) to `url` as JSON, 1 MB
 * at a time with a pause after each, and stops sending once the answer comes (a server may answer
 * before it has read the body, and close the connection): resolves to the answer's status and text.
 */
function postHuge(url, bytes, { declared = true } = {}) {
  return new Promise((resolve, reject) => {
    // The operator's token too: the MCP routes read no body without it.
    const headers = { ...ADMIN, 'content-type': 'application/json', ...(declared ? { 'content-length': String(bytes) } : {}) };
    const req = http.request(url, { method: 'POST', headers });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => { resolve({ status: res.statusCode, text }); req.destroy(); });
    });
    req.on('error', (e) => { if (!answered) reject(e); });
    const chunk = Buffer.alloc(1_000_000, 0x30);
    const answer = new Promise((r) => req.once('response', r));
    (async () => {
      req.flushHeaders();
      await Promise.race([answer, sleep(100)]);
      for (let sent = 0; sent < bytes && !answered && !req.destroyed; sent += chunk.length) {
        if (!req.write(chunk)) await new Promise((r) => { req.once('drain', r); req.once('close', r); });
        await Promise.race([answer, sleep(100)]);
      }
      if (!answered && !req.destroyed) req.end();
    })();
  });
}

async function mcpServerFor(t, opts) {
  const server = await startMcpServer(opts);
  t.after(() => server.close());
  return server;
}

/** The latest cf_agent_mcp_servers frame whose `pred` holds. */
function mcpFrame(client, pred, timeoutMs = 20000) {
  const match = (f) => f.type === 'cf_agent_mcp_servers' && pred(f.mcp);
  return waitUntil(() => client.frames.findLast(match), { timeoutMs, what: 'an MCP state frame' });
}

const addServer = (w, room, name, url) => w.fetch(`/agents/chat-agent/${room}/mcp-servers`, {
  method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name, url }),
});

/** The next turn on the same socket works and is offered the good server's tools. */
async function assertNextTurn(w, client, good = 'demo') {
  assert.ok(client.isOpen, 'the socket stays open');
  assert.equal((await turn(client, '[tokens:5] still there?')).outcome, 'completed');
  const offered = offeredTools(w.model.requests.at(-1));
  assert.ok(offered.includes(`mcp_${good}_add`), `the good server's tools are offered: ${offered}`);
}

test('an MCP tools/list of ~4 MiB of tiny values is refused unbuilt: the server fails with the reason, the good one stays', async (t) => {
  const good = await mcpServerFor(t);
  const bad = await mcpServerFor(t, { hostile: 'tiny-values' });
  const room = `mcp-tiny-${rid()}`;
  const { w, client, before } = await warmedTab(t, room, { MCP_DEMO_URL: good.url });
  await mcpFrame(client, (m) => m.servers.demo?.state === 'ready');

  assert.equal((await addServer(w, room, 'Tiny', bad.url)).status, 201);
  const failed = await mcpFrame(client, (m) => m.servers.tiny?.state === 'failed');
  assert.match(failed.mcp.servers.tiny.error, /MCP reply: too many JSON values \(limit \d+\)/);
  assert.ok(failed.mcp.tools.every((tool) => tool.serverId === 'demo'), 'no tool of the refused server');
  const grown = (await wasmMiB(w, room)) - before;
  assert.ok(grown < 16, `wasm memory grew by ${grown.toFixed(1)} MiB (bound 16)`);
  await assertNextTurn(w, client);
  assert.ok(!offeredTools(w.model.requests.at(-1)).some((n) => n.startsWith('mcp_tiny_')));
});

test('an MCP tool whose spec is 3 MiB is left out and named in the server status; its other tools are offered', async (t) => {
  const bad = await mcpServerFor(t, { hostile: 'huge-spec' });
  const room = `mcp-huge-${rid()}`;
  const { w, client, before } = await warmedTab(t, room, { MCP_DEMO_URL: bad.url });
  const ready = await mcpFrame(client, (m) => m.servers.demo?.state === 'ready');
  assert.deepEqual(ready.mcp.tools.map((tool) => tool.name), ['add', 'echo']);
  assert.match(ready.mcp.servers.demo.error, /^1 tool left out: 'huge' \(\d+ bytes; one tool's spec may have 32768\)$/);
  const grown = (await wasmMiB(w, room)) - before;
  assert.ok(grown < 16, `wasm memory grew by ${grown.toFixed(1)} MiB (bound 16)`);
  await assertNextTurn(w, client);
  const request = w.model.requests.at(-1);
  assert.ok(!offeredTools(request).includes('mcp_demo_huge'));
  assert.ok(JSON.stringify(request).length < 64 * 1024, 'the model request carries no 3 MiB spec');
  const listed = await (await w.fetch(`/agents/chat-agent/${room}/mcp-servers`, { headers: ADMIN })).json();
  assert.deepEqual(listed[0].tools, ['mcp_demo_add', 'mcp_demo_echo']);
});

test('an HTTP+SSE event stream flooded past its bytes is closed and the server fails with the reason', async (t) => {
  const good = await mcpServerFor(t);
  const flooding = await mcpServerFor(t, { legacySse: true });
  const room = `mcp-flood-${rid()}`;
  const { w, client, before } = await warmedTab(t, room, { MCP_DEMO_URL: good.url });
  assert.equal((await addServer(w, room, 'Flood', flooding.url)).status, 201);
  await mcpFrame(client, (m) => m.servers.flood?.state === 'ready' && m.servers.demo?.state === 'ready');

  const [sent] = await flooding.flood();
  const failed = await mcpFrame(client, (m) => m.servers.flood?.state === 'failed', 60000);
  assert.match(failed.mcp.servers.flood.error, /the event stream passed 67108864 bytes/);
  assert.ok(sent < 160 * MiB, `the stream was closed after ${sent} bytes`);
  const grown = (await wasmMiB(w, room)) - before;
  assert.ok(grown < 16, `wasm memory grew by ${grown.toFixed(1)} MiB (bound 16)`);
  await assertNextTurn(w, client);
});

test('a provider error of 20 MB is read only to its start: an error outcome, memory bounded, the next turn fine', async (t) => {
  const room = `model-huge-error-${rid()}`;
  const { w, client, before } = await warmedTab(t, room);
  const done = await turn(client, 'fail loudly [http-huge:500]');
  assert.equal(done.outcome, 'error');
  const grown = (await wasmMiB(w, room)) - before;
  assert.ok(grown < 8, `wasm memory grew by ${grown.toFixed(1)} MiB (bound 8)`);
  assert.ok(client.isOpen);
  assert.equal((await turn(client, '[tokens:5] still there?')).outcome, 'completed');
});

test('a 20 MB body on every route the demo and the crate serve is refused with 413 and stores nothing', async (t) => {
  const room = `routes-${rid()}`;
  const { w, client, before } = await warmedTab(t, room);
  const base = `/agents/chat-agent/${room}`;
  const routes = [
    'submit', 'schedule', 'mcp-servers', 'mcp-servers/demo/remove', 'submissions/x/cancel', 'get-messages', 'anything-else',
  ];
  for (const route of routes) {
    const res = await postHuge(`${w.url}${base}/${route}`, 20_000_000);
    assert.equal(res.status, 413, `POST …/${route} with 20 MB: ${res.status} ${res.text.slice(0, 200)}`);
    assert.match(res.text, /body too large \(limit 4194304 bytes\)/);
  }
  // The same bytes with no declared length, to the routes that read a body: reading stops at the limit.
  for (const route of ['submit', 'schedule', 'mcp-servers']) {
    const res = await postHuge(`${w.url}${base}/${route}`, 20_000_000, { declared: false });
    assert.equal(res.status, 413, `POST …/${route} streamed: ${res.status} ${res.text.slice(0, 200)}`);
  }
  // A server to add, sent as a form or as text (what a page of another site can send): 415.
  for (const type of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded']) {
    const res = await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': type }, body: JSON.stringify({ name: 'x', url: 'http://127.0.0.1:1/mcp' }) });
    assert.equal(res.status, 415, `${type}: ${res.status}`);
  }
  assert.deepEqual(await (await w.fetch(`${base}/mcp-servers`, { headers: ADMIN })).json(), [], 'no server was added');
  const stored = await getMessages(w.url, 'ChatAgent', room);
  assert.equal(stored.length, 2, 'only the warm-up turn is stored');
  const grown = (await wasmMiB(w, room)) - before;
  assert.ok(grown < 16, `wasm memory grew by ${grown.toFixed(1)} MiB (bound 16)`);
  assert.ok(client.isOpen);
  assert.equal((await turn(client, '[tokens:5] still there?')).outcome, 'completed');
});

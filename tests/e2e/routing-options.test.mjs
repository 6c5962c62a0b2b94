// End-to-end: the router's options on the real runtime. CORS: a page on an origin
// ALLOWED_ORIGINS names gets its preflight answered by the router (no token, no agent woken) and
// can read `get-messages` and the demo's routes; another origin gets a 403 and no CORS header. The
// test build (DEBUG_TOOLS=1) also serves the agents under `/debug-prefixed/` through a router with
// a prefix, a location hint and before-hooks (workerd implements no jurisdiction): a socket whose URL holds
// `banned=1` is refused by `on_before_connect`; `on_before_request` rewrites `…/latest` to
// `…/get-messages`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { TEST_BUILD_DIR, chatRequest, isDone, userMessage } from '../support/harness.mjs';
import { workerFor, rid } from '../support/e2e.mjs';

const PAGE = 'https://app.example';

test('a page on an allowed origin has its preflight answered and reads get-messages; another origin does not', async (t) => {
  const w = await workerFor(t, { bindings: { ALLOWED_ORIGINS: PAGE } });
  const path = `/agents/chat-agent/${rid('cors')}/get-messages`;
  const preflight = await w.fetch(path, {
    method: 'OPTIONS',
    headers: { origin: PAGE, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), PAGE);
  assert.match(preflight.headers.get('access-control-allow-methods'), /GET/);
  assert.match(preflight.headers.get('access-control-allow-headers'), /Authorization/);

  const read = await w.fetch(path, { headers: { origin: PAGE } });
  assert.equal(read.status, 200);
  assert.equal(read.headers.get('access-control-allow-origin'), PAGE);
  assert.deepEqual(await read.json(), []);

  const route = await w.fetch(`/agents/chat-agent/${rid('cors')}/submissions/none`, { headers: { origin: PAGE } });
  assert.equal(route.status, 404);
  assert.equal(route.headers.get('access-control-allow-origin'), PAGE, "on the author's routes and refusals too");

  const internal = await w.fetch(`/agents/chat-agent/${rid('cors')}/__chat-api`, {
    method: 'OPTIONS',
    headers: { origin: PAGE, 'access-control-request-method': 'POST' },
  });
  assert.equal(internal.status, 403, 'a preflight never opens the internal paths');
  assert.equal(await internal.text(), 'internal endpoint');

  const evil = await w.fetch(path, {
    method: 'OPTIONS',
    headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
  });
  assert.equal(evil.status, 403);
  assert.equal(evil.headers.get('access-control-allow-origin'), null);
  const evilRead = await w.fetch(path, { headers: { origin: 'https://evil.example' } });
  assert.equal(evilRead.status, 403);
  assert.equal(evilRead.headers.get('access-control-allow-origin'), null);
});

/** Opens a socket at `path`; `{ws, frames}` once open, or `{status, body}` when refused. */
function open(w, path) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${w.url.replace('http', 'ws')}${path}`);
    const frames = [];
    ws.on('message', (data) => frames.push(JSON.parse(data.toString())));
    ws.on('open', () => resolve({ ws, frames }));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    ws.on('error', () => {});
  });
}

const until = async (check, what) => {
  for (let i = 0; i < 500; i++) {
    const value = check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never saw ${what}`);
};

test('a router with a prefix, a location hint and before-hooks that refuse and rewrite', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t, { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR });
  const room = rid('prefixed');
  const banned = await open(w, `/debug-prefixed/chat-agent/${room}?_pk=${rid()}&banned=1`);
  assert.deepEqual(banned, { status: 403, body: 'banned by the router' });

  const { ws, frames } = await open(w, `/debug-prefixed/chat-agent/${room}?_pk=${rid()}`);
  t.after(() => ws.close());
  await until(() => frames.some((f) => f.type === 'cf_agent_mcp_servers'), 'the connect frames');
  const id = rid();
  ws.send(JSON.stringify(chatRequest(id, [userMessage(rid(), 'under a prefix')])));
  await until(() => frames.some(isDone(id)), 'the answer');

  const latest = await w.fetch(`/debug-prefixed/chat-agent/${room}/latest`);
  assert.equal(latest.status, 200, 'rewritten to get-messages by on_before_request');
  const messages = await latest.json();
  assert.deepEqual(messages.filter((m) => m.role === 'user').map((m) => m.parts[0].text), ['under a prefix']);
  const plain = await w.fetch(`/agents/chat-agent/${room}/get-messages`);
  assert.deepEqual(await plain.json(), messages, 'the same agent under either prefix');
  const unprefixedLatest = await w.fetch(`/agents/chat-agent/${room}/latest`);
  assert.equal(unprefixedLatest.status, 404, 'the default router has no such hook');
});

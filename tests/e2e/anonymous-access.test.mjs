// End-to-end on the real runtime: safe by default for deployment. With a real model (a model URL on
// a host that is not this machine, as a deployed agent reaches its provider; the runtime's outbound
// service carries its requests to the scripted model server, so the cases run on every machine) and
// no access check, a WebSocket upgrade, `get-messages` and the agent's own HTTP routes are refused
// with 403 `anonymous access is off: …`, no model call is made and the refusals log one warning for
// the isolate. With ALLOW_ANONYMOUS=1 a turn runs; with AUTH_TOKEN set a connection carrying the
// token runs one; with a loopback model and nothing set (local development) a turn runs as before.
// Requests refused (at the router, or by the agent's own `authorize` in its object) to new names
// create no storage and reach no MCP server.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startModelServer } from '../support/model-server.mjs';
import { userMessage, sendAndWait } from '../support/harness.mjs';
import { workerFor, tab, rid, refusedUpgrade, upgradeFrom, waitUntil } from '../support/e2e.mjs';
import { startMcpServer } from '../support/mcp-server.mjs';
import { setTimeout as sleep } from 'node:timers/promises';
import { sqliteFiles, querySqlite } from '../support/sqlite-files.mjs';

/** The real model's host: a reserved name (RFC 6761 `.test`) that never resolves, so only the
 * outbound service below can answer it. */
const MODEL_HOST = 'model.example.test';

let model = null;
before(async () => {
  model = await startModelServer();
});
after(async () => { await model?.close(); });

/** The worker's outbound fetches to MODEL_HOST, carried to the scripted model server; any other
 * outbound fetch fails, as it would with no network. */
async function toModelServer(request) {
  const target = new URL(request.url);
  if (target.hostname !== MODEL_HOST) return new Response('no network', { status: 502 });
  const server = new URL(model.url);
  target.protocol = server.protocol;
  target.host = server.host;
  const body = ['GET', 'HEAD'].includes(request.method) ? undefined : await request.arrayBuffer();
  return fetch(target, { method: request.method, headers: request.headers, body });
}

/** A worker whose model is at MODEL_HOST (the scripted server behind it); its console lines are
 * collected in `.logs` ({level, message}). */
async function realModelWorker(t, bindings = {}) {
  const logs = [];
  const w = await workerFor(t, {
    model,
    bindings: { OPENAI_BASE_URL: `http://${MODEL_HOST}${new URL(model.url).pathname}`, ...bindings },
    miniflare: { handleStructuredLogs: (log) => logs.push(log), outboundService: toModelServer },
  });
  w.logs = logs;
  return w;
}

function assertRefusedAnonymous({ status, body }, what) {
  assert.equal(status, 403, `${what}: ${body}`);
  assert.match(body, /^anonymous access is off: /, what);
  assert.match(body, /wrangler secret put AUTH_TOKEN/, what);
  assert.match(body, /ALLOW_ANONYMOUS = "1"/, what);
}

async function oneTurn(w, room, opts) {
  const c = await tab(w, room, opts);
  const { done, text } = await sendAndWait(c, rid(), [userMessage(rid('u'), 'hello there')], {}, 15000);
  await c.close();
  return { done, text };
}

test('a real model and no access check: upgrades, get-messages and routes are refused, no model call made', async (t) => {
  const w = await realModelWorker(t);
  const before = model.requests.length;
  const room = rid('anon');
  assertRefusedAnonymous(await refusedUpgrade(w.url, room), 'WebSocket upgrade');
  const read = await w.fetch(`/agents/chat-agent/${room}/get-messages`);
  assertRefusedAnonymous({ status: read.status, body: await read.text() }, 'get-messages');
  const submit = await w.fetch(`/agents/chat-agent/${room}/submit`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'spend please' }),
  });
  assertRefusedAnonymous({ status: submit.status, body: await submit.text() }, 'the agent\'s submit route');
  assertRefusedAnonymous(await refusedUpgrade(w.url, rid('anon-other')), 'another agent\'s upgrade');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(model.requests.length, before, 'no model call was made');
  const warnings = w.logs.filter((l) => l.message.includes('anonymous access is off'));
  assert.equal(warnings.length, 1, `one warning per isolate, not per request:\n${warnings.map((l) => l.message).join('\n')}`);
  assert.equal(warnings[0].level, 'warn');
  assert.match(warnings[0].message, new RegExp(`real model \\(OPENAI_BASE_URL at ${MODEL_HOST.replaceAll('.', '\\.')}\\)`));
});

test('a real model with ALLOW_ANONYMOUS=1: anyone may connect and a turn runs', async (t) => {
  const w = await realModelWorker(t, { ALLOW_ANONYMOUS: '1' });
  const before = model.requests.length;
  const { done, text } = await oneTurn(w, rid('anon-open'));
  assert.equal(done.outcome, 'completed');
  assert.equal(text, 'You said: hello there');
  assert.ok(model.requests.length > before, 'the model behind the outbound service answered');
  await oneTurn(w, rid('anon-open-2'));
  const notices = w.logs.filter((l) => l.message.includes('anonymous access is on'));
  assert.equal(notices.length, 1, `the opt-in is logged once per isolate:\n${notices.map((l) => l.message).join('\n')}`);
  assert.equal(notices[0].level, 'warn');
});

test('a real model with AUTH_TOKEN: a connection carrying the token runs a turn, one without it is refused', async (t) => {
  const w = await realModelWorker(t, { AUTH_TOKEN: 'anon-test-token' });
  const room = rid('anon-token');
  const { done } = await oneTurn(w, room, { query: { token: 'anon-test-token' } });
  assert.equal(done.outcome, 'completed');
  const refused = await refusedUpgrade(w.url, room);
  assert.equal(refused.status, 401, refused.body);
});

test('a loopback model and nothing set (local development): a turn runs', async (t) => {
  const w = await workerFor(t);
  assert.match(w.model.url, /^http:\/\/127\.0\.0\.1:/);
  const { done, text } = await oneTurn(w, rid('anon-local'));
  assert.equal(done.outcome, 'completed');
  assert.equal(text, 'You said: hello there');
});

test('refused at the router: 50 requests to new agent names create no object, write nothing and fetch nothing', async (t) => {
  const outbound = [];
  const w = await workerFor(t, {
    model,
    bindings: { OPENAI_BASE_URL: `http://${MODEL_HOST}${new URL(model.url).pathname}` },
    miniflare: { outboundService: (request) => { outbound.push(request.url); return toModelServer(request); } },
  });
  const before = (await sqliteFiles(w.persistDir)).length;
  for (let i = 0; i < 25; i++) {
    assertRefusedAnonymous(await refusedUpgrade(w.url, rid(`stranger-${i}`)), 'upgrade to a new name');
    const read = await w.fetch(`/agents/chat-agent/${rid(`stranger-read-${i}`)}/get-messages`);
    assertRefusedAnonymous({ status: read.status, body: await read.text() }, 'get-messages of a new name');
  }
  assert.equal((await sqliteFiles(w.persistDir)).length, before, 'no Durable Object was created');
  assert.deepEqual(outbound, [], 'no outbound request was made');
});

test("refused by the agent's own authorize: 50 requests to new names start no agent, write nothing and reach no MCP server", async (t) => {
  const mcp = await startMcpServer();
  t.after(() => mcp.close());
  // The router lets these requests through (a loopback model: local development); the demo's
  // own `authorize` (test build) refuses any request without the header. The runtime gives each
  // object it runs an empty database file; nothing may be written in it.
  const w = await workerFor(t, { bindings: { DEBUG_AUTHORIZE_HEADER: 'x-let-in', DEBUG_MEMORY: '1', MCP_DEMO_URL: mcp.url } });
  for (let i = 0; i < 25; i++) {
    const upgrade = await refusedUpgrade(w.url, rid(`stranger-${i}`));
    assert.equal(upgrade.status, 403, upgrade.body);
    assert.equal(upgrade.body, "refused by the agent's own authorize");
    const read = await w.fetch(`/agents/chat-agent/${rid(`stranger-read-${i}`)}/get-messages`);
    assert.equal(read.status, 403);
  }
  await sleep(300);
  const written = (await sqliteFiles(w.persistDir)).filter((f) => querySqlite(f, 'select name from sqlite_master').length > 0);
  assert.deepEqual(written, [], 'no table or row was written for a stranger');
  assert.deepEqual(mcp.hits, [], 'no MCP server was reached');
  // A request the agent lets in starts its agent (the isolate's first), which connects its server.
  const room = rid('let-in');
  const memory = await w.fetch(`/agents/chat-agent/${room}/__debug/memory`, { headers: { 'x-let-in': '1' } });
  assert.equal(memory.status, 200);
  assert.equal((await memory.json()).hostsCreated, 1, 'no agent was started for the 50 refused requests');
  await waitUntil(() => mcp.sessions.length > 0, { what: 'the declared MCP server connected' });
  assert.equal((await sqliteFiles(w.persistDir)).filter((f) => querySqlite(f, 'select name from sqlite_master').length > 0).length, 1);
});

test('a browser page of another origin is refused by default and let in when ALLOWED_ORIGINS names it', async (t) => {
  const w = await workerFor(t);
  const own = new URL(w.url).origin;
  const upgrade = (origin, room) => upgradeFrom(w.url, room, origin);
  const foreign = await upgrade('https://evil.example', rid('origin'));
  assert.equal(foreign.status, 403, foreign.body);
  assert.match(foreign.body, /cross-origin request refused/);
  assert.equal((await upgrade(own, rid('origin'))).status, 101, 'the worker\'s own origin connects');
  const read = await w.fetch(`/agents/chat-agent/${rid('origin')}/get-messages`, { headers: { origin: 'https://evil.example' } });
  assert.equal(read.status, 403, 'a cross-origin read is refused too');
  await w.restart({ bindings: { ALLOWED_ORIGINS: 'https://app.example' } });
  assert.equal((await upgrade('https://app.example', rid('origin'))).status, 101, 'an allowed origin connects');
  assert.equal((await upgrade('https://evil.example', rid('origin'))).status, 403, 'others still do not');
});

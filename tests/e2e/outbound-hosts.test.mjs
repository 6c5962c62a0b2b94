// The outbound host policy end to end: the built worker under Miniflare, the repository's MCP
// server (and its OAuth authorization server) on 127.0.0.1, the scripted model. With
// OUTBOUND_ALLOW_HOSTS off, an MCP server on a loopback, metadata or bare IP address is refused
// when it is added (400 with the reason, nothing stored, no request reaches it) and a declared one
// is shown failed with the reason and never fetched, through a turn too; with the host allowed,
// the same server connects. A sign-in whose metadata names an authorization server on a refused
// host fails with the reason before any request to that host or any registration.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { chatRequest, userMessage, isDone, ADMIN } from '../support/harness.mjs';
import { workerFor, tab, rid, waitUntil } from '../support/e2e.mjs';
import { startMcpServer } from '../support/mcp-server.mjs';

const OFF = { OUTBOUND_ALLOW_HOSTS: '' };

/** The latest cf_agent_mcp_servers frame a tab got whose server `id` is in `state`. */
function serverIn(client, id, state, timeoutMs = 15000) {
  const match = (f) => f.type === 'cf_agent_mcp_servers' && f.mcp.servers[id]?.state === state;
  return waitUntil(() => client.frames.findLast(match), { timeoutMs, what: `server ${id} ${state}` });
}
const json = { ...ADMIN, 'content-type': 'application/json' };

test('with no host allowed, an MCP server on this machine, a metadata address or a bare IP is refused: nothing stored, nothing fetched', async (t) => {
  const mcp = await startMcpServer();
  t.after(() => mcp.close());
  const w = await workerFor(t, { bindings: OFF });
  const room = rid('outbound');
  const base = `/agents/chat-agent/${room}`;
  const c = await tab(w, room);
  const port = new URL(mcp.url).port;
  const cases = [
    [mcp.url, /127\.0\.0\.1 is a loopback address/],
    [`http://localhost:${port}/mcp`, /localhost is a loopback name/],
    [`http://2130706433:${port}/mcp`, /127\.0\.0\.1 is a loopback address/],
    [`http://[::1]:${port}/mcp`, /\[::1\] is a loopback address/],
    ['http://169.254.169.254/latest/meta-data/', /the cloud metadata address/],
    ['http://metadata.google.internal/computeMetadata/v1/', /a cloud metadata name/],
    ['http://10.0.0.7/mcp', /a private address/],
    ['http://100.100.1.1/mcp', /a shared \(CGNAT\) address/],
    [`https://mcp.example.com/${'a'.repeat(2100)}`, /longer than 2048 bytes/],
  ];
  for (const [url, why] of cases) {
    const res = await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'Local', url }) });
    const text = await res.text();
    assert.equal(res.status, 400, `${url}: ${text}`);
    assert.match(text, /the MCP server URL is refused/, url);
    assert.match(text, why, url);
  }
  assert.match((await (await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'Local', url: mcp.url }) })).text()), /OUTBOUND_ALLOW_HOSTS/);
  await sleep(300);
  assert.deepEqual(await (await w.fetch(`${base}/mcp-servers`, { headers: ADMIN })).json(), [], 'nothing listed');
  assert.ok(!c.frames.some((f) => f.type === 'cf_agent_mcp_servers' && Object.keys(f.mcp.servers).length > 0), 'no tab saw a server');
  assert.deepEqual(mcp.hits, [], 'no request reached the server');
  await w.restart();
  assert.deepEqual(await (await w.fetch(`${base}/mcp-servers`, { headers: ADMIN })).json(), [], 'nothing was stored');
  assert.deepEqual(mcp.hits, []);
});

test('a declared server on a host not allowed is shown failed with the reason and never fetched, a turn included; allowed, it connects', async (t) => {
  const mcp = await startMcpServer();
  t.after(() => mcp.close());
  const w = await workerFor(t, { bindings: { ...OFF, MCP_DEMO_URL: mcp.url } });
  const room = rid('outbound-declared');
  const c = await tab(w, room);
  const failed = await serverIn(c, 'demo', 'failed');
  assert.match(failed.mcp.servers.demo.error, /^the MCP server URL is refused: 127\.0\.0\.1 is a loopback address; the deployment allows it with OUTBOUND_ALLOW_HOSTS$/);
  const id = rid();
  c.send(chatRequest(id, [userMessage(rid('u'), 'hello')]));
  await c.waitFor(isDone(id), 20000);
  await sleep(300);
  assert.deepEqual(mcp.hits, [], 'neither the start nor the turn reached the server');

  await w.restart({ bindings: { OUTBOUND_ALLOW_HOSTS: `127.0.0.1:${new URL(mcp.url).port}` } });
  const again = await tab(w, room);
  await serverIn(again, 'demo', 'ready');
  assert.ok(mcp.hits.length > 0);
});

test('a sign-in whose authorization server is on a host not allowed fails with the reason: no request to it, no registration', async (t) => {
  const mcp = await startMcpServer({ oauth: { issuerHost: 'localhost' } });
  t.after(() => mcp.close());
  const w = await workerFor(t);
  const room = rid('outbound-oauth');
  const c = await tab(w, room);
  const added = await w.fetch(`/agents/chat-agent/${room}/mcp-servers`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'Signed', url: mcp.url }) });
  assert.equal(added.status, 201);
  const failed = await serverIn(c, 'signed', 'failed', 20000);
  assert.match(failed.mcp.servers.signed.error, /is refused: localhost is a loopback name/);
  assert.equal(failed.mcp.servers.signed.auth_url, null);
  assert.ok(mcp.hits.some((h) => h.includes('/.well-known/oauth-protected-resource')), `${mcp.hits}`);
  assert.ok(!mcp.hits.some((h) => h.includes('/.well-known/oauth-authorization-server') || h.includes('/.well-known/openid-configuration')), `${mcp.hits}`);
  assert.deepEqual(mcp.events.filter((e) => e.type === 'register'), [], 'no client registered');
});

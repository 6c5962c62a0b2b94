// An MCP server behind an OAuth authorization server, end to end: the built worker under
// Miniflare, the repository's MCP server guarded by the test authorization server built from the
// official TypeScript SDK's auth pieces (tests/support/mcp-oauth.mjs), the stock `agents` client,
// the scripted model. Covers: a server added without credentials waits for a sign-in, with the
// authorization URL (PKCE S256, state, the agent's callback, the server as resource) in
// `onMcpUpdate`; following it (the authorization server redirects back to the agent's callback)
// connects the server and offers its tools; the callback cannot be replayed; an access token
// that expires is refreshed before a call; after a runtime restart the stored tokens connect the
// server without a new sign-in; a token the server stops taking is refreshed and the call sent again.
// A callback with a made-up state to a new agent name is refused and opens nothing (no table, no
// row, no fetch), while a real one still completes on an object the runtime evicted. With
// MCP_SIGN_IN_SAME_BROWSER=1 the tab's link is the agent's own start link: the browser that opens
// it gets a one-time cookie, and a callback without it is refused and leaves the sign-in pending.
// With AUTH_TOKEN, the router lets through, without the token, only a callback (or start link)
// whose state the addressed agent signed with it; a made-up one is refused before any object.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { chatRequest, userMessage, getMessages, isDone, ADMIN } from '../support/harness.mjs';
import { workerFor, tab, rid, waitUntil, offeredTools, toolMessages } from '../support/e2e.mjs';
import { startMcpServer } from '../support/mcp-server.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';
import { sqliteFiles, querySqlite } from '../support/sqlite-files.mjs';

const TOKEN_SECONDS = 4;

async function toolTurn(client, tool, args, timeoutMs = 20000) {
  const id = rid();
  client.send(chatRequest(id, [userMessage(rid('u'), `[tool:${tool}:${JSON.stringify(args)}]`)]));
  return client.waitFor(isDone(id), timeoutMs);
}

test('a server that asks for a sign-in: the URL reaches the agents client, the callback connects it, tokens are refreshed and kept', async (t) => {
  const mcp = await startMcpServer({ oauth: { accessTtlSeconds: TOKEN_SECONDS } });
  t.after(() => mcp.close());
  const w = await workerFor(t);
  const room = `oauth-${rid()}`;
  const base = `/agents/chat-agent/${room}`;

  const updates = [];
  const client = await mountAgentChat({ url: w.url, name: room, hook: 'agents', agentOptions: { onMcpUpdate: (state) => updates.push(state) } });
  t.after(() => client.unmount());
  const c = await tab(w, room);

  const added = await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Locked', url: mcp.url }) });
  assert.equal(added.status, 201);
  const waiting = await waitUntil(() => updates.find((u) => u.servers.locked?.state === 'authenticating'), { what: 'a server waiting for a sign-in' });
  assert.deepEqual(waiting.tools, []);
  const authUrl = new URL(waiting.servers.locked.auth_url);
  const origin = new URL(mcp.url).origin;
  assert.equal(`${authUrl.origin}${authUrl.pathname}`, `${origin}/authorize`);
  // Who asks for the sign-in, next to the link: the authorization server's host.
  assert.equal(waiting.servers.locked.auth_issuer, '127.0.0.1');
  const callback = `${w.url}${base}/callback`;
  assert.equal(authUrl.searchParams.get('redirect_uri'), callback);
  assert.equal(authUrl.searchParams.get('code_challenge_method'), 'S256');
  assert.match(authUrl.searchParams.get('code_challenge'), /^[A-Za-z0-9_-]{43}$/);
  assert.match(authUrl.searchParams.get('state'), /^[A-Za-z0-9_-]+\.locked$/);
  assert.equal(authUrl.searchParams.get('resource'), mcp.url);
  assert.deepEqual(mcp.events.filter((e) => e.type === 'register').map((e) => e.redirectUris), [[callback]]);
  // No call reached the MCP server itself.
  assert.deepEqual(mcp.events.filter((e) => e.type === 'mcp'), []);

  // The person opens the URL; the authorization server signs them in and sends them back.
  const toAgent = await fetch(authUrl, { redirect: 'manual' });
  assert.equal(toAgent.status, 302);
  const back = toAgent.headers.get('location');
  assert.ok(back.startsWith(`${callback}?`), back);
  const landed = await fetch(back, { redirect: 'manual' });
  assert.equal(landed.status, 302, await landed.text());
  assert.equal(landed.headers.get('location'), `${w.url}/`);
  const replay = await fetch(back, { redirect: 'manual' });
  assert.equal(replay.status, 400, 'a callback is used once');

  const ready = await waitUntil(() => updates.find((u) => u.servers.locked?.state === 'ready'), { what: 'the signed-in server ready' });
  assert.equal(ready.servers.locked.auth_url, null);
  assert.deepEqual(ready.tools.map((tool) => tool.name).sort(), ['add', 'echo', 'fail', 'picture']);
  assert.deepEqual(mcp.events.filter((e) => e.type === 'grant').map((e) => e.grant), ['authorization_code']);

  const first = await toolTurn(c, 'mcp_locked_echo', { text: 'signed in' });
  assert.equal(first.outcome, 'completed');
  assert.ok(offeredTools(w.model.requests.at(-2)).includes('mcp_locked_echo'));
  assert.equal(toolMessages(w.model.requests.at(-1)).at(-1).content, 'echo: signed in');

  // The access token expires; the next call refreshes it first and goes through.
  await sleep(TOKEN_SECONDS * 1000 + 500);
  const second = await toolTurn(c, 'mcp_locked_echo', { text: 'refreshed' });
  assert.equal(second.outcome, 'completed');
  assert.equal(toolMessages(w.model.requests.at(-1)).at(-1).content, 'echo: refreshed');
  assert.deepEqual(mcp.events.filter((e) => e.type === 'grant').map((e) => e.grant), ['authorization_code', 'refresh_token']);

  // A restart: the stored sign-in connects the server again, with no new authorization.
  await w.restart();
  const after = await tab(w, room);
  await waitUntil(() => after.frames.findLast((f) => f.type === 'cf_agent_mcp_servers' && f.mcp.servers.locked?.state === 'ready'), { what: 'ready after the restart' });
  assert.equal(mcp.events.filter((e) => e.type === 'authorize').length, 1);
  const third = await toolTurn(after, 'mcp_locked_add', { a: 1, b: 2 });
  assert.equal(third.outcome, 'completed');

  // The server stops taking the access token before it expires: the 401 leads to a refresh and
  // the call is sent again.
  mcp.revokeAccessTokens();
  const fourth = await toolTurn(after, 'mcp_locked_echo', { text: 'after revocation' });
  assert.equal(fourth.outcome, 'completed');
  assert.equal(toolMessages(w.model.requests.at(-1)).at(-1).content, 'echo: after revocation');
  assert.ok(mcp.events.some((e) => e.type === 'refused-token'), 'the old token was refused');
  assert.equal(mcp.events.filter((e) => e.type === 'grant').at(-1).grant, 'refresh_token');
  assert.equal(mcp.events.filter((e) => e.type === 'authorize').length, 1, 'no new sign-in');

  const stored = await getMessages(w.url, 'ChatAgent', room);
  const outputs = stored.flatMap((m) => m.parts).filter((p) => p.type?.startsWith('tool-mcp_locked_')).map((p) => p.output);
  assert.deepEqual(outputs, ['echo: signed in', 'echo: refreshed', { sum: 3 }, 'echo: after revocation']);
});

test('a sign-in the person refuses leaves the server failed with the reason', async (t) => {
  const mcp = await startMcpServer({ oauth: { accessTtlSeconds: 60 } });
  t.after(() => mcp.close());
  const w = await workerFor(t);
  const room = `oauth-${rid()}`;
  const base = `/agents/chat-agent/${room}`;
  const c = await tab(w, room);
  await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Locked', url: mcp.url }) });
  const waiting = await waitUntil(() => c.frames.findLast((f) => f.type === 'cf_agent_mcp_servers' && f.mcp.servers.locked?.state === 'authenticating'), { what: 'a server waiting for a sign-in' });
  const state = new URL(waiting.mcp.servers.locked.auth_url).searchParams.get('state');
  const forged = await fetch(`${w.url}${base}/callback?code=x&state=${encodeURIComponent(`forged.locked`)}`, { redirect: 'manual' });
  assert.equal(forged.status, 400, 'a state the agent did not make is refused');
  const refused = await fetch(`${w.url}${base}/callback?error=access_denied&state=${encodeURIComponent(state)}`, { redirect: 'manual' });
  assert.equal(refused.status, 400);
  const failed = await waitUntil(() => c.frames.findLast((f) => f.type === 'cf_agent_mcp_servers' && f.mcp.servers.locked?.state === 'failed'), { what: 'the failed server' });
  assert.equal(failed.mcp.servers.locked.error, 'the sign-in was refused: access_denied');
  assert.deepEqual(mcp.events.filter((e) => e.type === 'grant'), []);
});

test('a server whose resource metadata names another resource gets no sign-in: nothing registered, no token asked for', async (t) => {
  const mcp = await startMcpServer({ oauth: { resource: 'https://api.bank.example/' } });
  t.after(() => mcp.close());
  const w = await workerFor(t);
  const room = `oauth-other-${rid()}`;
  const c = await tab(w, room);
  const added = await w.fetch(`/agents/chat-agent/${room}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Phish', url: mcp.url }) });
  assert.equal(added.status, 201);
  const failed = await c.waitFor((f) => f.type === 'cf_agent_mcp_servers' && f.mcp.servers.phish?.state === 'failed', 20000);
  assert.match(failed.mcp.servers.phish.error, /names another resource/);
  assert.equal(failed.mcp.servers.phish.auth_url, null, 'no sign-in link reaches a tab');
  assert.deepEqual(mcp.events.filter((e) => ['register', 'authorize', 'grant'].includes(e.type)), [], 'no client registered, no sign-in, no token');
});

/** The sign-in link a tab was shown for server `id` (waits for it). */
async function signInLink(c, id) {
  const waiting = await waitUntil(() => c.frames.findLast((f) => f.type === 'cf_agent_mcp_servers' && f.mcp.servers[id]?.state === 'authenticating'), { what: 'a server waiting for a sign-in' });
  return new URL(waiting.mcp.servers[id].auth_url);
}

/** The authorization server's answer to `authUrl`: the callback URL it sends the browser back to. */
async function signInAt(authUrl) {
  const toAgent = await fetch(authUrl, { redirect: 'manual' });
  assert.equal(toAgent.status, 302);
  return toAgent.headers.get('location');
}

test("a stranger's callback to a new agent name is refused and opens nothing; a real one completes on an evicted object", async (t) => {
  const mcp = await startMcpServer({ oauth: { accessTtlSeconds: 60 } });
  t.after(() => mcp.close());
  // The demo's declared server: an agent that starts connects it.
  const declared = await startMcpServer();
  t.after(() => declared.close());
  const w = await workerFor(t, { bindings: { DEBUG_MEMORY: '1', MCP_DEMO_URL: declared.url } });
  const states = ['forged.locked', 'x.demo', 'nodot', '.locked', 'a.b.c', ''];
  for (let i = 0; i < 24; i++) {
    const state = states[i % states.length];
    const callback = await fetch(`${w.url}/agents/chat-agent/${rid(`stranger-${i}`)}/callback?code=c&state=${encodeURIComponent(state)}`, { redirect: 'manual' });
    assert.equal(callback.status, 400, `state ${JSON.stringify(state)}`);
    assert.equal(await callback.text(), 'This sign-in is unknown or has expired.');
    const start = await fetch(`${w.url}/agents/chat-agent/${rid(`stranger-start-${i}`)}/callback?start=${encodeURIComponent(state)}`, { redirect: 'manual' });
    assert.equal(start.status, 400, `start ${JSON.stringify(state)}`);
  }
  await sleep(300);
  const written = (await sqliteFiles(w.persistDir)).filter((f) => querySqlite(f, 'select name from sqlite_master').length > 0);
  assert.deepEqual(written, [], 'no table or row was written for a stranger');
  assert.deepEqual([...mcp.hits, ...declared.hits], [], 'no MCP server or authorization server was reached');
  const memory = await w.fetch(`/agents/chat-agent/${rid('let-in')}/__debug/memory`);
  assert.equal((await memory.json()).hostsCreated, 1, 'no agent was started for the strangers\' callbacks');

  // A real sign-in, its callback reaching an object the runtime has evicted meanwhile.
  const room = `oauth-cold-${rid()}`;
  const base = `/agents/chat-agent/${room}`;
  const c = await tab(w, room);
  const added = await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Locked', url: mcp.url }) });
  assert.equal(added.status, 201);
  const back = await signInAt(await signInLink(c, 'locked'));
  await c.close();
  await w.restart();
  const landed = await fetch(back, { redirect: 'manual' });
  assert.equal(landed.status, 302, await landed.text());
  const after = await tab(w, room);
  await waitUntil(() => after.frames.findLast((f) => f.type === 'cf_agent_mcp_servers' && f.mcp.servers.locked?.state === 'ready'), { what: 'the signed-in server ready' });
  assert.equal(mcp.events.find((e) => e.type === 'grant')?.grant, 'authorization_code');
});

test('MCP_SIGN_IN_SAME_BROWSER=1: only the browser that opened the sign-in link completes or refuses it', async (t) => {
  const mcp = await startMcpServer({ oauth: { accessTtlSeconds: 60 } });
  t.after(() => mcp.close());
  const w = await workerFor(t, { bindings: { MCP_SIGN_IN_SAME_BROWSER: '1' } });
  const room = `oauth-bound-${rid()}`;
  const base = `/agents/chat-agent/${room}`;
  const updates = [];
  const client = await mountAgentChat({ url: w.url, name: room, hook: 'agents', agentOptions: { onMcpUpdate: (state) => updates.push(state) } });
  t.after(() => client.unmount());
  const c = await tab(w, room);
  await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Locked', url: mcp.url }) });
  // The stock client gets the agent's start link, in the same frame shape.
  const waiting = await waitUntil(() => updates.find((u) => u.servers.locked?.state === 'authenticating'), { what: 'a server waiting for a sign-in' });
  const link = new URL(waiting.servers.locked.auth_url);
  assert.equal(`${link.origin}${link.pathname}`, `${w.url}${base}/callback`);
  assert.match(link.searchParams.get('start'), /^[A-Za-z0-9_-]+\.locked$/);
  assert.equal(waiting.servers.locked.auth_issuer, '127.0.0.1');

  // The browser that opens it is handed a one-time cookie for the callback path and sent on.
  const opened = await fetch(link, { redirect: 'manual' });
  assert.equal(opened.status, 302, await opened.text());
  const authUrl = new URL(opened.headers.get('location'));
  assert.equal(`${authUrl.origin}${authUrl.pathname}`, `${new URL(mcp.url).origin}/authorize`);
  assert.equal(authUrl.searchParams.get('state'), link.searchParams.get('start'));
  const setCookie = opened.headers.get('set-cookie');
  assert.match(setCookie, /^mcp_sign_in_locked=[A-Za-z0-9_-]{43}; /);
  assert.match(setCookie, new RegExp(`Path=${base}/callback;`));
  assert.match(setCookie, /Secure; HttpOnly; SameSite=Lax/);
  const cookie = setCookie.split(';')[0];
  // Another browser opening the same link is refused; the first may open it again.
  const second = await fetch(link, { redirect: 'manual' });
  assert.equal(second.status, 409);
  const again = await fetch(link, { redirect: 'manual', headers: { cookie } });
  assert.equal(again.status, 302);
  assert.equal(again.headers.get('set-cookie'), null, 'no new secret is handed out');

  // The callback without the cookie (or with another) neither completes nor cancels the sign-in.
  const back = await signInAt(authUrl);
  const state = new URL(back).searchParams.get('state');
  const bare = await fetch(back, { redirect: 'manual' });
  assert.equal(bare.status, 403);
  assert.equal(await bare.text(), 'This sign-in must be completed in the browser that opened its link.');
  const wrong = await fetch(back, { redirect: 'manual', headers: { cookie: 'mcp_sign_in_locked=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
  assert.equal(wrong.status, 403);
  const cancel = await fetch(`${w.url}${base}/callback?error=access_denied&state=${encodeURIComponent(state)}`, { redirect: 'manual' });
  assert.equal(cancel.status, 403, 'another browser cannot cancel it either');
  assert.deepEqual(mcp.events.filter((e) => e.type === 'grant'), [], 'no code was traded');
  assert.equal(c.frames.findLast((f) => f.type === 'cf_agent_mcp_servers').mcp.servers.locked.state, 'authenticating', 'the sign-in is still pending');

  // The browser that opened the link completes it, and its cookie is cleared.
  const landed = await fetch(back, { redirect: 'manual', headers: { cookie: `other=1; ${cookie}` } });
  assert.equal(landed.status, 302, await landed.text());
  assert.equal(landed.headers.get('location'), `${w.url}/`);
  assert.match(landed.headers.get('set-cookie'), /^mcp_sign_in_locked=; Path=[^;]+; Max-Age=0/);
  await waitUntil(() => updates.find((u) => u.servers.locked?.state === 'ready'), { what: 'the signed-in server ready' });
  assert.deepEqual(mcp.events.filter((e) => e.type === 'grant').map((e) => e.grant), ['authorization_code']);
});

test('with AUTH_TOKEN: a sign-in completes without the token through the router; a made-up state is refused before any object', async (t) => {
  const mcp = await startMcpServer({ oauth: { accessTtlSeconds: 60 } });
  t.after(() => mcp.close());
  const TOKEN = 'oauth-deploy-token';
  const w = await workerFor(t, { bindings: { AUTH_TOKEN: TOKEN, MCP_SIGN_IN_SAME_BROWSER: '1' } });
  const room = `oauth-token-${rid()}`;
  const base = `/agents/chat-agent/${room}`;
  const c = await tab(w, room, { query: { token: TOKEN } });
  const added = await w.fetch(`${base}/mcp-servers?token=${TOKEN}`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Locked', url: mcp.url }) });
  assert.equal(added.status, 201, await added.text());
  const link = await signInLink(c, 'locked');
  const state = link.searchParams.get('start');
  assert.match(state, /^[A-Za-z0-9_-]{44}\.locked$/, 'the nonce carries its MAC');

  // Made-up states, to this agent and to new names: the router's 401, no object reached.
  const before = (await sqliteFiles(w.persistDir)).length;
  const forgedNonce = `${state.slice(0, 22)}${'A'.repeat(22)}`;
  const forged = [`${forgedNonce}.locked`, 'forged.locked', `${state.slice(0, 44)}.other`];
  for (const [i, made] of forged.entries()) {
    for (const name of [room, rid(`stranger-${i}`)]) {
      const callback = await fetch(`${w.url}/agents/chat-agent/${name}/callback?code=c&state=${encodeURIComponent(made)}`, { redirect: 'manual' });
      assert.equal(callback.status, 401, `${made} to ${name}`);
      const start = await fetch(`${w.url}/agents/chat-agent/${name}/callback?start=${encodeURIComponent(made)}`, { redirect: 'manual' });
      assert.equal(start.status, 401, `start ${made} to ${name}`);
    }
  }
  // The agent's own state, sent to another name, does not verify there either.
  const elsewhere = await fetch(`${w.url}/agents/chat-agent/${rid('elsewhere')}/callback?start=${encodeURIComponent(state)}`, { redirect: 'manual' });
  assert.equal(elsewhere.status, 401);
  assert.equal((await sqliteFiles(w.persistDir)).length, before, 'no Durable Object was created');

  // The real link and callback pass the router without the token.
  const opened = await fetch(link, { redirect: 'manual' });
  assert.equal(opened.status, 302, await opened.text());
  const cookie = opened.headers.get('set-cookie').split(';')[0];
  const back = await signInAt(opened.headers.get('location'));
  const bare = await fetch(back, { redirect: 'manual' });
  assert.equal(bare.status, 403, 'past the router, the browser binding still holds');
  const landed = await fetch(back, { redirect: 'manual', headers: { cookie } });
  assert.equal(landed.status, 302, await landed.text());
  await waitUntil(() => c.frames.findLast((f) => f.type === 'cf_agent_mcp_servers' && f.mcp.servers.locked?.state === 'ready'), { what: 'the signed-in server ready' });
});

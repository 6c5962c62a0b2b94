// MCP servers end to end: the built worker under Miniflare, the repository's MCP server on the
// official TypeScript SDK (tests/support/mcp-server.mjs), the scripted model and real sockets.
// Covers: the declared server's state and tools (read page by page) seen by the stock `agents` client
// (`onMcpUpdate`), its tools offered to the model under `mcp_<server>_<tool>`, calls routed to
// the server with their results stored (structured, error, image), a server that goes away
// mid-turn (a tool error, the turn goes on), a server added at run time with a bearer token (a
// wrong one seen as a failure with its reason) that is reconnected after a runtime restart, and
// its removal; a tool list that changes (`notifications/tools/list_changed` on a call's answer)
// listed again on the same session; embedded resources and resource links as text for the model;
// a server that speaks only the older HTTP+SSE transport (reached after its 405, again after a
// restart, a list change seen on its stream, failed with the reason as soon as its stream ends and
// a tool error then); a server's error text cut for the tabs and quoted on one log line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, userMessage, getMessages, isDone, ADMIN } from '../support/harness.mjs';
import { workerFor, tab, rid, waitUntil, offeredTools, toolMessages, waitForModelRequests } from '../support/e2e.mjs';
import { startMcpServer } from '../support/mcp-server.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';

async function mcpServerFor(t, opts) {
  const server = await startMcpServer(opts);
  t.after(() => server.close());
  return server;
}

/** The latest cf_agent_mcp_servers frame a tab got (from frame `since` on) whose `pred` holds. */
function mcpFrame(client, pred, { since = 0, timeoutMs = 10000 } = {}) {
  const match = (f) => f.type === 'cf_agent_mcp_servers' && pred(f.mcp);
  return waitUntil(() => client.frames.slice(since).findLast(match), { timeoutMs, what: 'an MCP state frame' });
}

const ready = (id) => (mcp) => mcp.servers[id]?.state === 'ready';

/** A turn whose user message asks the scripted model to call `tool` with `args`. */
async function toolTurn(client, tool, args, timeoutMs = 20000) {
  const id = rid();
  client.send(chatRequest(id, [userMessage(rid('u'), `[tool:${tool}:${JSON.stringify(args)}]`)]));
  return client.waitFor(isDone(id), timeoutMs);
}

function toolPartOf(messages, tool) {
  return messages.flatMap((m) => m.parts).find((p) => p.type === `tool-${tool}`);
}

test('the declared server is seen by the agents client and its tools are offered, called and stored', async (t) => {
  const mcp = await mcpServerFor(t);
  const w = await workerFor(t, { bindings: { MCP_DEMO_URL: mcp.url } });
  const room = `mcp-${rid()}`;

  const updates = [];
  const client = await mountAgentChat({ url: w.url, name: room, hook: 'agents', agentOptions: { onMcpUpdate: (state) => updates.push(state) } });
  t.after(() => client.unmount());
  const seen = await waitUntil(() => updates.find((u) => u.servers.demo?.state === 'ready'), { what: 'a ready server in onMcpUpdate' });
  assert.equal(seen.servers.demo.name, 'demo');
  assert.equal(seen.servers.demo.server_url, mcp.url);
  assert.equal(seen.servers.demo.auth_url, null);
  assert.equal(seen.servers.demo.error, null);
  assert.equal(seen.servers.demo.instructions, 'Small arithmetic and echo tools.');
  assert.deepEqual(seen.tools.map((tool) => [tool.name, tool.serverId]).sort(), [['add', 'demo'], ['echo', 'demo'], ['fail', 'demo'], ['picture', 'demo']]);

  const c = await tab(w, room);
  await mcpFrame(c, ready('demo'));
  const done = await toolTurn(c, 'mcp_demo_add', { a: 2, b: 3 });
  assert.equal(done.outcome, 'completed');
  const [first, second] = await waitForModelRequests(w.model, 2);
  const offered = offeredTools(first);
  for (const name of ['mcp_demo_add', 'mcp_demo_echo', 'mcp_demo_fail', 'mcp_demo_picture']) assert.ok(offered.includes(name), `${name} offered: ${offered}`);
  const add = first.tools.find((tool) => tool.function.name === 'mcp_demo_add');
  assert.equal(add.function.description, 'Adds two numbers.');
  assert.deepEqual(Object.keys(add.function.parameters.properties).sort(), ['a', 'b']);
  assert.deepEqual(mcp.calls, [{ name: 'add', args: { a: 2, b: 3 } }]);
  assert.deepEqual(JSON.parse(toolMessages(second)[0].content), { sum: 5 });

  await toolTurn(c, 'mcp_demo_fail', {});
  await toolTurn(c, 'mcp_demo_picture', {});
  const stored = await getMessages(w.url, 'ChatAgent', room);
  const added = toolPartOf(stored, 'mcp_demo_add');
  assert.equal(added.state, 'output-available');
  assert.deepEqual(added.output, { sum: 5 });
  const failed = toolPartOf(stored, 'mcp_demo_fail');
  assert.equal(failed.state, 'output-error');
  assert.equal(failed.errorText, 'the tool failed on purpose');
  const picture = toolPartOf(stored, 'mcp_demo_picture');
  assert.match(picture.output, /^\[image \(image\/png\), about \d+ bytes, not shown\]\n\na red square$/);
});

test('a server that goes away mid-turn gives a tool error, the turn goes on and the tabs see it failed', async (t) => {
  const mcp = await mcpServerFor(t);
  const w = await workerFor(t, { bindings: { MCP_DEMO_URL: mcp.url } });
  const c = await tab(w, `mcp-${rid()}`);
  await mcpFrame(c, ready('demo'));
  await mcp.close();

  const done = await toolTurn(c, 'mcp_demo_echo', { text: 'hi' });
  assert.equal(done.outcome, 'completed');
  const requests = await waitForModelRequests(w.model, 2);
  const result = toolMessages(requests.at(-1))[0].content;
  assert.match(result, /MCP server 'demo' failed/);
  const failed = await mcpFrame(c, (m) => m.servers.demo?.state === 'failed');
  assert.match(failed.mcp.servers.demo.error, /could not reach the server|HTTP 5/);
  assert.deepEqual(failed.mcp.tools, []);

  // The next turn is not offered the failed server's tools.
  const id = rid();
  c.send(chatRequest(id, [userMessage(rid('u'), 'hello again')]));
  await c.waitFor(isDone(id), 20000);
  assert.ok(!offeredTools(w.model.requests.at(-1)).some((n) => n.startsWith('mcp_')));
});

test('a server added at run time with a bearer token is stored, reconnected after a restart, listed and removed', async (t) => {
  const mcp = await mcpServerFor(t, { token: 'sesame' });
  const w = await workerFor(t);
  const room = `mcp-${rid()}`;
  const base = `/agents/chat-agent/${room}`;
  const c = await tab(w, room);
  assert.deepEqual(c.frames.find((f) => f.type === 'cf_agent_mcp_servers').mcp.servers, {});

  const refused = await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Tools', url: 'ftp://nowhere' }) });
  assert.equal(refused.status, 400);
  // A wrong token: the server refuses the handshake and the tabs see why.
  await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Remote Tools', url: mcp.url, token: 'wrong' }) });
  const refusedFrame = await mcpFrame(c, (m) => m.servers['remote-tools']?.state === 'failed');
  assert.equal(refusedFrame.mcp.servers['remote-tools'].error, 'HTTP 401: missing or wrong bearer token');
  // The same name and URL with the right token: updated and connected again.
  const added = await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Remote Tools', url: mcp.url, token: 'sesame' }) });
  assert.equal(added.status, 201);
  assert.deepEqual(await added.json(), { id: 'remote-tools' });
  await mcpFrame(c, ready('remote-tools'));
  const sessionsBefore = mcp.sessions.length;

  await w.restart();
  const after = await tab(w, room);
  await mcpFrame(after, ready('remote-tools'));
  assert.ok(mcp.sessions.length > sessionsBefore, 'a new session was opened after the restart');
  const done = await toolTurn(after, 'mcp_remote-tools_echo', { text: 'after restart' });
  assert.equal(done.outcome, 'completed');
  assert.deepEqual(mcp.calls.at(-1), { name: 'echo', args: { text: 'after restart' } });
  const stored = await getMessages(w.url, 'ChatAgent', room);
  assert.equal(toolPartOf(stored, 'mcp_remote-tools_echo').output, 'echo: after restart');

  const listed = await (await w.fetch(`${base}/mcp-servers`, { headers: ADMIN })).json();
  assert.deepEqual(listed.map((s) => [s.id, s.state, s.declared]), [['remote-tools', 'ready', false]]);
  assert.ok(listed[0].tools.includes('mcp_remote-tools_add'));

  const mark = after.mark();
  const removed = await w.fetch(`${base}/mcp-servers/remote-tools/remove`, { method: 'POST', headers: ADMIN });
  assert.deepEqual(await removed.json(), { removed: true });
  await mcpFrame(after, (m) => Object.keys(m.servers).length === 0, { since: mark });
  await w.restart();
  const last = await tab(w, room);
  assert.deepEqual(last.frames.find((f) => f.type === 'cf_agent_mcp_servers').mcp.servers, {}, 'a removed server stays removed');
});

test('a server that lists its tools in pages has every page read and every tool offered', async (t) => {
  const mcp = await mcpServerFor(t, { pageSize: 1 });
  const w = await workerFor(t, { bindings: { MCP_DEMO_URL: mcp.url } });
  const c = await tab(w, `mcp-${rid()}`);
  const frame = await mcpFrame(c, ready('demo'));
  assert.deepEqual(mcp.listings, [null, '1', '2', '3']);
  assert.deepEqual(frame.mcp.tools.map((tool) => tool.name), ['add', 'echo', 'fail', 'picture']);
  const id = rid();
  c.send(chatRequest(id, [userMessage(rid('u'), 'which tools?')]));
  await c.waitFor(isDone(id), 20000);
  assert.deepEqual(offeredTools(w.model.requests.at(-1)).filter((n) => n.startsWith('mcp_')), ['mcp_demo_add', 'mcp_demo_echo', 'mcp_demo_fail', 'mcp_demo_picture']);
});

test('a tool list that changes is read again when the server says so, and resources reach the model as text', async (t) => {
  const mcp = await mcpServerFor(t, { extras: true });
  const w = await workerFor(t, { bindings: { MCP_DEMO_URL: mcp.url } });
  const room = `mcp-${rid()}`;
  const c = await tab(w, room);
  const first = await mcpFrame(c, ready('demo'));
  assert.ok(!first.mcp.tools.some((tool) => tool.name === 'later'), 'not there before it is added');

  await toolTurn(c, 'mcp_demo_document', {});
  const expected = '[resource memo://notes/1]\nRemember the milk.\n\n[resource link spec.pdf <https://example.com/spec.pdf>]';
  assert.equal(toolMessages(w.model.requests.at(-1)).at(-1).content, expected);
  const stored = await getMessages(w.url, 'ChatAgent', room);
  assert.equal(toolPartOf(stored, 'mcp_demo_document').output, expected);

  const mark = c.mark();
  const sessions = mcp.sessions.length;
  const listings = mcp.listings.length;
  const grown = await toolTurn(c, 'mcp_demo_grow', {});
  assert.equal(grown.outcome, 'completed');
  const relisted = await mcpFrame(c, (m) => m.servers.demo?.state === 'ready' && m.tools.some((tool) => tool.name === 'later'), { since: mark });
  assert.ok(relisted.mcp.tools.some((tool) => tool.name === 'grow'), 'the other tools stay');
  assert.equal(mcp.listings.length, listings + 1, 'listed once more');
  assert.equal(mcp.sessions.length, sessions, 'on the same session');
  assert.ok(!c.since(mark).some((f) => f.type === 'cf_agent_mcp_servers' && f.mcp.servers.demo?.state !== 'ready'), 'the server stayed ready');

  const done = await toolTurn(c, 'mcp_demo_later', {});
  assert.equal(done.outcome, 'completed');
  const offered = offeredTools(w.model.requests.at(-2));
  assert.ok(offered.includes('mcp_demo_later'), `the new tool is offered: ${offered}`);
  assert.deepEqual(mcp.calls.at(-1), { name: 'later', args: {} });
  assert.equal(toolMessages(w.model.requests.at(-1)).at(-1).content, 'here now');
});

test('a server that speaks only the older HTTP+SSE transport is reached over its event stream, again after a restart', async (t) => {
  const mcp = await mcpServerFor(t, { legacySse: true, extras: true });
  const w = await workerFor(t, { bindings: { MCP_DEMO_URL: mcp.url } });
  const room = `mcp-${rid()}`;
  const c = await tab(w, room);
  const frame = await mcpFrame(c, ready('demo'));
  assert.ok(frame.mcp.tools.some((tool) => tool.name === 'add'));
  assert.equal(mcp.sessions.length, 1, 'one event stream opened');

  const done = await toolTurn(c, 'mcp_demo_add', { a: 4, b: 5 });
  assert.equal(done.outcome, 'completed');
  assert.deepEqual(mcp.calls.at(-1), { name: 'add', args: { a: 4, b: 5 } });
  assert.deepEqual(JSON.parse(toolMessages(w.model.requests.at(-1)).at(-1).content), { sum: 9 });

  // A list change announced on the stream is read again too.
  const mark = c.mark();
  await toolTurn(c, 'mcp_demo_grow', {});
  await mcpFrame(c, (m) => m.servers.demo?.state === 'ready' && m.tools.some((tool) => tool.name === 'later'), { since: mark });
  assert.equal(mcp.sessions.length, 1, 'listed again on the same stream');

  // A runtime restart: the stream is opened again and the server's tools come back.
  await w.restart();
  const again = await tab(w, room);
  await mcpFrame(again, ready('demo'));
  assert.equal(mcp.sessions.length, 2, 'a new event stream after the restart');
  const echoed = await toolTurn(again, 'mcp_demo_echo', { text: 'after restart' });
  assert.equal(echoed.outcome, 'completed');
  assert.equal(toolMessages(w.model.requests.at(-1)).at(-1).content, 'echo: after restart');

  // The server goes away: the stream ends, the server is failed at once with the reason (its tools
  // withdrawn), a call to its tool is a tool error and the turn goes on.
  await mcp.close();
  const gone = await mcpFrame(again, (m) => m.servers.demo?.state === 'failed');
  assert.match(gone.mcp.servers.demo.error, /the event stream (ended|broke off)/);
  const after = await toolTurn(again, 'mcp_demo_echo', { text: 'anyone?' });
  assert.equal(after.outcome, 'completed');
  assert.match(toolMessages(w.model.requests.at(-1)).at(-1).content, /mcp_demo_echo/);
});

test('adding an MCP server is an operator act: a no-cors POST, a wrong token or no MCP_ADMIN_TOKEN add nothing and fetch nothing', async (t) => {
  const mcp = await startMcpServer();
  t.after(() => mcp.close());
  const w = await workerFor(t);
  const room = rid('mcp-admin');
  const base = `/agents/chat-agent/${room}`;
  const body = JSON.stringify({ name: 'Sneaky', url: mcp.url });
  // What any web page can make a browser send to 127.0.0.1: a form-like POST, no custom header.
  const noCors = await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { 'content-type': 'text/plain;charset=UTF-8' }, body });
  assert.equal(noCors.status, 401, await noCors.text());
  const wrong = await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { authorization: 'Bearer guess', 'content-type': 'application/json' }, body });
  assert.equal(wrong.status, 403);
  const listed = await w.fetch(`${base}/mcp-servers`);
  assert.equal(listed.status, 401, 'the servers, their statuses and errors are not shown to strangers');
  await w.restart({ bindings: { MCP_ADMIN_TOKEN: '' } });
  const off = await w.fetch(`${base}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body });
  assert.equal(off.status, 403);
  assert.match(await off.text(), /MCP server management is off: set the MCP_ADMIN_TOKEN secret/);
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(mcp.sessions, [], 'the agent never reached the server');
  await w.restart({ bindings: { MCP_ADMIN_TOKEN: 'test-admin' } });
  assert.deepEqual(await (await w.fetch(`${base}/mcp-servers`, { headers: ADMIN })).json(), [], 'nothing was stored');
});

test("a server's error text reaches the tabs cut to its start and the log quoted on one line", async (t) => {
  const loud = await mcpServerFor(t, { hostile: 'rpc-error' });
  const logs = [];
  const w = await workerFor(t, { miniflare: { handleStructuredLogs: (log) => logs.push(log) } });
  const room = `mcp-${rid()}`;
  const c = await tab(w, room);
  const added = await w.fetch(`/agents/chat-agent/${room}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Loud', url: loud.url }) });
  assert.equal(added.status, 201);
  const failed = await mcpFrame(c, (m) => m.servers.loud?.state === 'failed');
  const error = failed.mcp.servers.loud.error;
  assert.ok(error.startsWith('error -32000: no tools today'), error.slice(0, 100));
  assert.ok(error.length <= 300, `the tabs got ${error.length} characters of the server's error`);
  const line = await waitUntil(() => logs.find((l) => l.message.includes("mcp: server 'loud' failed")), { what: 'the failure logged' });
  assert.ok(!line.message.includes('\n'), 'the server cannot start a line of its own');
  assert.ok(!logs.flatMap((l) => l.message.split('\n')).some((l) => l.startsWith('[chat-agent victim]')));
  assert.ok(line.message.length < 400, `a log line of ${line.message.length} characters`);
});

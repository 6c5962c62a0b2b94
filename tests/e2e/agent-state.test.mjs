// End-to-end: the agent as a whole through the stock `agents` client (`AgentClient`, the class
// under `useAgent`) on the real runtime: the synced state on connect, a tab's `setState` stored
// and broadcast to another tab, a refused change (`cf_agent_state_error`, nothing stored or
// broadcast), the state across a runtime restart, and callable methods through `call` and `stub`
// with error replies for an unknown method and bad arguments, and the connection hooks. The
// demo's ChatAgent: state `{}`, refused when not an object; callables `echo(value)` and
// `setStateField(key, value)`; a tab's `?role=` kept as its connection's state, `ping` → `pong`;
// `remind(text, inSeconds)`, a named schedule whose callback shows the reminder in every tab.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import WS from 'ws';
import { AgentClient } from 'agents/client';
import { workerFor, rid, waitUntil } from '../support/e2e.mjs';

const AGENT = 'ChatAgent';

/** A stock client on instance `name`, ready (identity and state in), closed when `t` ends. */
async function client(t, w, name) {
  const updates = [];
  const errors = [];
  const c = new AgentClient({
    agent: AGENT,
    name,
    host: new URL(w.url).host,
    WebSocket: WS,
    onStateUpdate: (state, source) => updates.push({ state, source }),
    onStateUpdateError: (error) => errors.push(error),
  });
  t.after(() => c.close());
  await c.ready;
  return { c, updates, errors };
}

const fromServer = (updates) => updates.filter((u) => u.source === 'server').map((u) => u.state);

test('a tab gets the state on connect; its setState is stored and broadcast to another tab', async (t) => {
  const w = await workerFor(t);
  const room = rid('state');
  const a = await client(t, w, room);
  assert.deepEqual(a.c.state, {}, 'the initial state is there once the client is ready');
  const b = await client(t, w, room);
  a.c.setState({ topic: 'rust', count: 1 });
  await waitUntil(() => fromServer(b.updates).some((s) => s.topic === 'rust'), { what: 'the broadcast' });
  assert.deepEqual(b.c.state, { topic: 'rust', count: 1 });
  assert.deepEqual(fromServer(a.updates), [{}], 'the sender is not sent its own change back');
  const late = await client(t, w, room);
  assert.deepEqual(late.c.state, { topic: 'rust', count: 1 }, 'stored: a later tab gets it');
});

test('a refused change is told to its tab only, and nothing is stored or broadcast', async (t) => {
  const w = await workerFor(t);
  const room = rid('state');
  const a = await client(t, w, room);
  const b = await client(t, w, room);
  a.c.setState(['not', 'an', 'object']);
  await waitUntil(() => a.errors.length > 0, { what: 'cf_agent_state_error' });
  assert.deepEqual(a.errors, ['State update rejected'], "the agents SDK's text (the reason is logged)");
  a.c.setState({ after: true });
  await waitUntil(() => fromServer(b.updates).some((s) => s.after), { what: 'the next change' });
  assert.deepEqual(fromServer(b.updates), [{}, { after: true }], 'the refused change never reached b');
  assert.deepEqual(b.errors, []);
});

test('the state survives a restart of the runtime', async (t) => {
  const w = await workerFor(t);
  const room = rid('state');
  const a = await client(t, w, room);
  const b = await client(t, w, room);
  a.c.setState({ notes: ['milk', 'eggs'] });
  await waitUntil(() => b.c.state?.notes, { what: 'the change in the other tab' });
  a.c.close();
  b.c.close();
  await w.restart();
  const after = await client(t, w, room);
  assert.deepEqual(after.c.state, { notes: ['milk', 'eggs'] });
});

test('call and stub round trips; a callable sets the state for every tab', async (t) => {
  const w = await workerFor(t);
  const room = rid('rpc');
  const a = await client(t, w, room);
  const b = await client(t, w, room);
  const value = { nested: [1, 'two', { three: 3 }], flag: true };
  assert.deepEqual(await a.c.call('echo', [value]), value);
  assert.equal(await a.c.stub.echo('plain'), 'plain');
  const state = await a.c.stub.setStateField('mood', 'sunny');
  assert.deepEqual(state, { mood: 'sunny' });
  await waitUntil(() => b.c.state?.mood === 'sunny', { what: 'the state in the other tab' });
  await waitUntil(() => a.c.state?.mood === 'sunny', { what: 'the state in the calling tab' });
  assert.deepEqual(await b.c.call('setStateField', ['count', 2]), { mood: 'sunny', count: 2 });
});

test('an unknown method and bad arguments are error replies, and the socket stays open', async (t) => {
  const w = await workerFor(t);
  const a = await client(t, w, rid('rpc'));
  await assert.rejects(a.c.call('launchRockets', []), { message: 'Method launchRockets does not exist' });
  await assert.rejects(a.c.stub.setStateField(42), (e) => {
    assert.match(e.message, /^Invalid arguments for method setStateField/);
    return true;
  });
  await assert.rejects(a.c.call('echo', []), /Invalid arguments for method echo/);
  assert.equal(await a.c.stub.echo(7), 7, 'still answering');
});

test("on_connect sees the request's query and keeps it as the connection's own state; on_message gets the author's own frames", async (t) => {
  const w = await workerFor(t);
  const room = rid('conn');
  const pongs = (c) => new Promise((resolve) => {
    c.addEventListener('message', (event) => {
      const frame = JSON.parse(event.data);
      if (frame.type === 'pong') resolve(frame);
    });
  });
  const admin = new AgentClient({ agent: AGENT, name: room, host: new URL(w.url).host, WebSocket: WS, query: { role: 'admin' } });
  const guest = new AgentClient({ agent: AGENT, name: room, host: new URL(w.url).host, WebSocket: WS });
  t.after(() => { admin.close(); guest.close(); });
  await Promise.all([admin.ready, guest.ready]);
  const [adminPong, guestPong] = [pongs(admin), pongs(guest)];
  admin.send(JSON.stringify({ type: 'ping' }));
  guest.send(JSON.stringify({ type: 'ping' }));
  assert.deepEqual(await adminPong, { type: 'pong', connection: { role: 'admin' } });
  assert.deepEqual(await guestPong, { type: 'pong', connection: { role: 'guest' } });
});

test('a reminder set through a callable fires on its schedule and shows in every tab', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t);
  const room = rid('remind');
  const a = await client(t, w, room);
  const b = await client(t, w, room);
  const state = await a.c.stub.remind('stretch', 2);
  assert.deepEqual(state, { reminder: '⏳ stretch' });
  await waitUntil(() => b.c.state?.reminder === '⏳ stretch', { what: 'the pending reminder in the other tab' });
  const setAt = Date.now();
  await waitUntil(() => b.c.state?.reminder === '⏰ stretch', { what: 'the reminder firing', timeoutMs: 15000 });
  assert.ok(Date.now() - setAt >= 1000, 'not before it was due');
  await waitUntil(() => a.c.state?.reminder === '⏰ stretch', { what: 'the reminder in the calling tab' });
  await assert.rejects(a.c.stub.remind('', 2), /a text and 1 to 86400 seconds/);
});

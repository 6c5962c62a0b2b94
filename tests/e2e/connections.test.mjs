// End-to-end: every tab reachable from the author's code, on the real runtime with the stock
// `agents` client (`AgentClient`) and real sockets. The demo's ChatAgent tags each tab with its
// `?role=` (default `guest`), makes a `viewer` readonly, answers `{"type":"whoami"}` with the
// connection's id, tags and readonly flag, tells the other tabs `{"type":"presence","left"}` from
// its `on_close` and every tab `{"type":"state-changed","by"}` from its `on_state_changed`; its
// callable `announce(text, tag?, inSeconds?)` broadcasts `{"type":"announcement","text"}` to
// every tab or to those holding `tag`, now or from a schedule (its route `POST …/announce`
// `{text, tag?}` now); `set_readonly(id, readonly)` (an
// admin tab only) makes a tab readonly or writable.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import WS from 'ws';
import { AgentClient } from 'agents/client';
import { chatRequest, getMessages, isDone, isResponse, userMessage } from '../support/harness.mjs';
import { workerFor, tab, rid, waitUntil, waitForModelRequests } from '../support/e2e.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';

const AGENT = 'ChatAgent';

/** A stock client on `room` with `query`, ready; every frame it receives is kept. */
async function client(t, w, room, query = {}) {
  const frames = [];
  const stateErrors = [];
  const c = new AgentClient({
    agent: AGENT,
    name: room,
    host: new URL(w.url).host,
    WebSocket: WS,
    query,
    onStateUpdateError: (error) => stateErrors.push(error),
  });
  c.addEventListener('message', (event) => {
    try { frames.push(JSON.parse(event.data)); } catch { /* not JSON */ }
  });
  t.after(() => c.close());
  await c.ready;
  return { c, frames, stateErrors };
}

const announcements = (frames) => frames.filter((f) => f.type === 'announcement').map((f) => f.text);

test('a broadcast from a schedule reaches the two tabs holding its tag and not a third without it', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t);
  const room = rid('broadcast');
  const staff1 = await client(t, w, room, { role: 'staff' });
  const staff2 = await client(t, w, room, { role: 'staff' });
  const guest = await client(t, w, room);
  assert.deepEqual(await guest.c.call('announce', ['standup', 'staff', 1]), { scheduled: true });
  await waitUntil(() => announcements(staff1.frames).includes('standup') && announcements(staff2.frames).includes('standup'),
    { what: 'the scheduled announcement on both staff tabs', timeoutMs: 15000 });
  // Sent after the scheduled one: once the guest has it, it would have had the first too.
  assert.deepEqual(await staff1.c.call('announce', ['all hands', null, 0]), { sentTo: 3 });
  await waitUntil(() => announcements(guest.frames).includes('all hands'), { what: 'the broadcast to every tab' });
  assert.deepEqual(announcements(guest.frames), ['all hands'], 'the tagged broadcast did not reach the guest');
  assert.deepEqual(announcements(staff2.frames), ['standup', 'all hands']);
  const routed = await w.fetch(`/agents/chat-agent/${room}/announce`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'from a route', tag: 'guest' }),
  });
  assert.deepEqual(await routed.json(), { sentTo: 1 }, "from the author's route too");
  await waitUntil(() => announcements(guest.frames).includes('from a route'), { what: 'the routed broadcast' });
  const empty = await w.fetch(`/agents/chat-agent/${room}/announce`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: ' ' }),
  });
  assert.equal(empty.status, 400);
});

test("a tab's tags and readonly flag are set when it connects", async (t) => {
  const w = await workerFor(t);
  const room = rid('tags');
  const staff = await tab(w, room, { query: { role: 'staff' } });
  const viewer = await tab(w, room, { query: { role: 'viewer' } });
  staff.send({ type: 'whoami' });
  viewer.send({ type: 'whoami' });
  assert.deepEqual(await staff.waitFor('whoami'), { type: 'whoami', id: staff.pk, tags: ['staff'], readonly: false });
  assert.deepEqual(await viewer.waitFor('whoami'), { type: 'whoami', id: viewer.pk, tags: ['viewer'], readonly: true });
});

test('a readonly tab watches every stream and state change, and may change nothing', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t);
  const room = rid('viewer');
  const writer = await tab(w, room);
  const viewer = await tab(w, room, { query: { role: 'viewer' } });
  const stockViewer = await client(t, w, room, { role: 'viewer' });

  const refusedId = rid();
  viewer.send(chatRequest(refusedId, [userMessage(rid(), 'let me in')]));
  const refused = await viewer.waitFor(isResponse(refusedId));
  assert.equal(refused.error, true);
  assert.equal(refused.done, true);
  assert.match(refused.body, /Connection is readonly/);

  const id = rid();
  writer.send(chatRequest(id, [userMessage(rid(), 'hello from the writer')]));
  await writer.waitFor(isDone(id), 15000);
  await viewer.waitFor(isDone(id), 15000);
  assert.ok(viewer.frames.some((f) => isResponse(id)(f) && !f.done && f.body), 'the viewer saw the stream');

  stockViewer.c.setState({ hijacked: true });
  await waitUntil(() => stockViewer.stateErrors.length > 0, { what: 'cf_agent_state_error' });
  assert.deepEqual(stockViewer.stateErrors, ['Connection is readonly']);
  await assert.rejects(stockViewer.c.call('announce', ['hi', null, 0]), /Connection is readonly/);
  assert.equal(await stockViewer.c.call('echo', ['a readonly-safe method']), 'a readonly-safe method');

  const mark = viewer.mark();
  viewer.send({ type: 'cf_agent_chat_clear' });
  viewer.send({ type: 'cf_agent_tool_approval', toolCallId: 'call_x', approved: true });
  await viewer.waitFor((f) => f.type === 'cf_agent_chat_error' || (f.error && /readonly/.test(f.body ?? f.error)));
  viewer.send({ type: 'whoami' });
  await viewer.waitFor('whoami');
  assert.ok(!viewer.since(mark).some((f) => f.type === 'cf_agent_chat_clear'), 'nothing was cleared');

  const writerState = await client(t, w, room);
  writerState.c.setState({ topic: 'allowed' });
  await waitUntil(() => stockViewer.c.state?.topic === 'allowed', { what: 'the state change on the viewer' });
  const messages = await getMessages(w.url, AGENT, room);
  assert.deepEqual(messages.filter((m) => m.role === 'user').map((m) => m.parts[0].text), ['hello from the writer']);
  assert.equal(w.model.requests.length, 1, 'only the writer reached the model');
});

test("a viewer through the stock useAgentChat: its sendMessage fails with the SDK's error, the writer's answer shows", { timeout: 30000 }, async (t) => {
  const w = await workerFor(t);
  const room = rid('viewer-hook');
  const viewer = await mountAgentChat({ url: w.url, name: room, agentOptions: { query: { role: 'viewer' } } });
  t.after(() => viewer.unmount());
  await viewer.settled();
  viewer.chat.sendMessage({ text: 'let me in' });
  const error = await viewer.waitFor((chat) => chat.error ?? viewer.errors[0]);
  assert.match(String(error?.message ?? error), /Connection is readonly/);
  assert.equal(w.model.requests.length, 0);
  const writer = await tab(w, room);
  const id = rid();
  writer.send(chatRequest(id, [userMessage(rid(), 'from the writer')]));
  await writer.waitFor(isDone(id), 15000);
  // The answer streams to the viewer: its message shows as soon as the stream starts, its words after.
  const hasText = (m) => m.role === 'assistant' && m.parts.some((p) => p.type === 'text' && p.text);
  const answer = await viewer.waitFor((chat) => chat.messages.find(hasText), 15000);
  assert.ok(answer, 'the answer streamed to the viewer');
});

test('an admin makes a tab readonly with set_readonly, and writable again', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t);
  const room = rid('demote');
  const admin = await client(t, w, room, { role: 'admin' });
  const guest = await tab(w, room);
  await assert.rejects(
    (await client(t, w, room)).c.call('set_readonly', [guest.pk, true]),
    /only an admin tab may do this/,
  );
  assert.deepEqual(await admin.c.call('set_readonly', [guest.pk, true]), { id: guest.pk, readonly: true });
  const refusedId = rid();
  guest.send(chatRequest(refusedId, [userMessage(rid(), 'refused')]));
  assert.match((await guest.waitFor(isResponse(refusedId))).body, /Connection is readonly/);
  await admin.c.call('set_readonly', [guest.pk, false]);
  const id = rid();
  guest.send(chatRequest(id, [userMessage(rid(), 'accepted')]));
  await guest.waitFor(isDone(id), 15000);
  await waitForModelRequests(w.model, 1);
  assert.equal(w.model.requests.length, 1);
});

test("the author's on_close and on_state_changed run: the other tabs hear of them", async (t) => {
  const w = await workerFor(t);
  const room = rid('hooks');
  const a = await tab(w, room);
  const b = await tab(w, room);
  await b.close();
  assert.deepEqual(await a.waitFor('presence'), { type: 'presence', left: b.pk });
  const c = await tab(w, room);
  a.send({ type: 'cf_agent_state', state: { topic: 'hooks' } });
  assert.deepEqual(await c.waitFor('state-changed'), { type: 'state-changed', by: a.pk });
  assert.deepEqual(await a.waitFor('state-changed'), { type: 'state-changed', by: a.pk });
  const stock = await client(t, w, room);
  await stock.c.call('remind', ['tea', 60]);
  assert.deepEqual(await a.waitFor('state-changed'), { type: 'state-changed', by: 'server' });
});


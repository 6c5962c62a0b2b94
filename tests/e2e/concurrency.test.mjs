// End-to-end: message concurrency. For each strategy a worker is started with
// MESSAGE_CONCURRENCY set, one tab starts a slow turn and, while it streams, a second tab and then
// the first tab submit overlapping messages, each request carrying the transcript its tab shows
// (as useAgentChat posts it). Asserted: which requests end skipped (to their requester only) or
// completed, what was persisted and broadcast, what the model was sent, the drop rollback, and
// the debounce quiet window; plus clear and cancel of queued turns.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, chatRequest, userMessage, getMessages, isDone } from '../support/harness.mjs';
import { workerFor, rid, responsesOf, chunkFrames, waitUntil, modelTexts, probe, terminalOf, tab } from '../support/e2e.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 20000;

/**
 * Tab A starts a slow turn r1; once it streams, tab B submits r2 and then (after A has seen B's
 * message) tab A submits r3. Returns ids, users, marks and the send time of r3.
 */
async function overlap(w, room, { slow = 'first [tokens:30] [delay:20]', third = 'third' } = {}) {
  const a = await tab(w, room);
  const b = await tab(w, room);
  const markA = a.mark();
  const markB = b.mark();
  const u1 = userMessage(rid('u1'), slow);
  const r1 = rid();
  a.send(chatRequest(r1, [u1]));
  const start = await a.waitFor((f) => f.id === r1 && f.body?.includes('"type":"start"'), TURN_MS);
  const a1 = { id: JSON.parse(start.body).messageId, role: 'assistant', parts: [{ type: 'step-start' }] };
  await a.waitFor((f) => f.id === r1 && f.body?.includes('text-delta'), TURN_MS);

  const u2 = userMessage(rid('u2'), 'second');
  const r2 = rid();
  b.send(chatRequest(r2, [u1, a1, u2]));
  const r2At = Date.now();
  // A's view now includes B's message if the agent broadcast it (not under drop).
  await a.waitFor((f) => f.type === 'cf_agent_chat_messages' && f.messages.some((m) => m.id === u2.id), 300).catch(() => {});
  const u3 = userMessage(rid('u3'), third);
  const r3 = rid();
  a.send(chatRequest(r3, [u1, a1, u2, u3]));
  const r3At = Date.now();
  return { a, b, markA, markB, r1, r2, r3, u1, u2, u3, a1, r2At, r3At };
}

/** The terminal frame of `id` on `client` (waiting for it if needed). */
const terminal = (client, id) => terminalOf(client, id, TURN_MS);

/** Assert the agent is idle (nothing running, queued or owed) through a resume probe. */
async function assertIdle(c) {
  const probeId = probe(c);
  const answer = await c.waitFor((f) => f.probeId === probeId);
  assert.deepEqual(answer, { type: 'cf_agent_stream_resume_none', reason: 'idle', probeId });
}

/** The model request whose last user text is `text`. */
const requestFor = (model, text) => model.requests.filter((r) => modelTexts(r).at(-1) === text);

test('queue: every overlapping submit is kept and runs, in arrival order, after the running turn', async (t) => {
  const w = await workerFor(t, { bindings: { MESSAGE_CONCURRENCY: 'queue' } });
  const room = 'cc-queue';
  const s = await overlap(w, room);
  const d1 = await terminal(s.a, s.r1);
  const d2 = await terminal(s.b, s.r2);
  const d3 = await terminal(s.a, s.r3);
  for (const d of [d1, d2, d3]) assert.equal(d.outcome, 'completed');
  for (const id of [s.r1, s.r2, s.r3]) await terminal(s.b, id);
  for (const id of [s.r1, s.r2, s.r3]) await terminal(s.a, id);
  assert.deepEqual(d2.messageIds, [s.u2.id]);
  assert.deepEqual(d3.messageIds, [s.u2.id, s.u3.id]);
  // Every turn is broadcast to both tabs, strictly one after another.
  for (const [c, mark] of [[s.a, s.markA], [s.b, s.markB]]) {
    const frames = c.since(mark);
    const doneAt = [s.r1, s.r2, s.r3].map((id) => frames.findIndex(isDone(id)));
    assert.ok(doneAt.every((i) => i >= 0), 'every terminal frame reaches every tab');
    assert.ok(doneAt[0] < doneAt[1] && doneAt[1] < doneAt[2], 'in arrival order');
    const firstR2 = frames.findIndex((f) => f.id === s.r2 && !f.done);
    const firstR3 = frames.findIndex((f) => f.id === s.r3 && !f.done);
    assert.ok(firstR2 > doneAt[0], 'r2 starts after r1 ended (the running turn was not interrupted)');
    assert.ok(firstR3 > doneAt[1], 'r3 starts after r2 ended');
  }
  assert.equal(w.model.requests.length, 3);
  assert.ok(modelTexts(w.model.requests[1]).includes('second'));
  assert.ok(modelTexts(w.model.requests[2]).includes('third'));
  const persisted = await getMessages(w.url, AGENT, room);
  for (const u of [s.u1, s.u2, s.u3]) assert.ok(persisted.some((m) => m.id === u.id), `${u.id} persisted`);
  assert.equal(persisted.filter((m) => m.role === 'assistant').length, 3);
  await assertIdle(s.a);
});

test('latest: every message is kept and broadcast, superseded submits end skipped for their requester only, the newest runs with all of them', async (t) => {
  const w = await workerFor(t, { bindings: { MESSAGE_CONCURRENCY: 'latest' } });
  const room = 'cc-latest';
  const s = await overlap(w, room);
  assert.equal((await terminal(s.a, s.r1)).outcome, 'completed', 'the running turn is not interrupted');
  const skipped = await terminal(s.b, s.r2);
  assert.deepEqual(skipped, { type: 'cf_agent_use_chat_response', id: s.r2, body: '', done: true, outcome: 'skipped', messageIds: [s.u2.id] });
  const d3 = await terminal(s.a, s.r3);
  assert.equal(d3.outcome, 'completed');
  await terminal(s.b, s.r3);

  const framesA = s.a.since(s.markA);
  const framesB = s.b.since(s.markB);
  assert.equal(responsesOf(framesA, s.r2).length, 0, 'the other tab hears nothing of the skipped request');
  assert.equal(chunkFrames(framesB, s.r2).length, 0, 'a skipped request streams nothing');
  // Both new user messages were broadcast to the other tab when submitted.
  assert.ok(framesA.some((f) => f.type === 'cf_agent_chat_messages' && f.messages.some((m) => m.id === s.u2.id)));
  assert.ok(framesB.some((f) => f.type === 'cf_agent_chat_messages' && f.messages.some((m) => m.id === s.u3.id)));

  assert.equal(w.model.requests.length, 2, 'one turn for the overlapping burst');
  const texts = modelTexts(w.model.requests[1]);
  for (const x of [s.u1, s.u2, s.u3]) assert.ok(texts.includes(x.parts[0].text), `model saw "${x.parts[0].text}"`);
  const persisted = await getMessages(w.url, AGENT, room);
  for (const u of [s.u1, s.u2, s.u3]) assert.ok(persisted.some((m) => m.id === u.id), `${u.id} persisted`);
  assert.equal(persisted.filter((m) => m.role === 'assistant').length, 2);
  await assertIdle(s.b);
});

test('merge: overlapping messages stay in history as written and are answered together in one turn', async (t) => {
  const w = await workerFor(t, { bindings: { MESSAGE_CONCURRENCY: 'merge' } });
  const room = 'cc-merge';
  const s = await overlap(w, room);
  assert.equal((await terminal(s.a, s.r1)).outcome, 'completed');
  const skipped = await terminal(s.b, s.r2);
  assert.equal(skipped.outcome, 'skipped');
  assert.deepEqual(skipped.messageIds, [s.u2.id]);
  assert.equal((await terminal(s.a, s.r3)).outcome, 'completed');
  assert.equal(responsesOf(s.a.since(s.markA), s.r2).length, 0, 'skip goes to the requester only');

  assert.equal(w.model.requests.length, 2, 'one turn answers both');
  const second = w.model.requests[1];
  const texts = modelTexts(second);
  assert.ok(texts.includes('second') && texts.includes('third'), `model saw both: ${JSON.stringify(texts)}`);
  assert.equal(texts.filter((x) => x === 'second').length, 1);
  const persisted = await getMessages(w.url, AGENT, room);
  const u2 = persisted.find((m) => m.id === s.u2.id);
  const u3 = persisted.find((m) => m.id === s.u3.id);
  assert.deepEqual(u2.parts, [{ type: 'text', text: 'second' }], 'kept as written');
  assert.deepEqual(u3.parts, [{ type: 'text', text: 'third' }], 'kept as written');
  assert.equal(persisted.filter((m) => m.role === 'assistant').length, 2);
});

test('drop: an overlapping submit is not stored; its requester gets a rollback transcript then skipped, and the others hear nothing', async (t) => {
  const w = await workerFor(t, { bindings: { MESSAGE_CONCURRENCY: 'drop' } });
  const room = 'cc-drop';
  const s = await overlap(w, room);
  const skipped2 = await terminal(s.b, s.r2);
  assert.deepEqual(skipped2, { type: 'cf_agent_use_chat_response', id: s.r2, body: '', done: true, outcome: 'skipped', messageIds: [s.u2.id] });
  const skipped3 = await terminal(s.a, s.r3);
  assert.equal(skipped3.outcome, 'skipped');
  assert.deepEqual(skipped3.messageIds, [s.u2.id, s.u3.id]);
  assert.equal((await terminal(s.a, s.r1)).outcome, 'completed', 'the running turn goes on');

  // B: a transcript without its message (no connect flag), immediately before its skipped frame.
  const framesB = s.b.since(s.markB);
  const skipAtB = framesB.findIndex(isDone(s.r2));
  const rollbackB = framesB[skipAtB - 1];
  assert.equal(rollbackB.type, 'cf_agent_chat_messages');
  assert.equal(rollbackB.connect, undefined);
  assert.ok(!rollbackB.messages.some((m) => m.id === s.u2.id), 'rolled back');
  assert.deepEqual(rollbackB.messages.map((m) => m.id), [s.u1.id]);
  const framesA = s.a.since(s.markA);
  const skipAtA = framesA.findIndex(isDone(s.r3));
  assert.equal(framesA[skipAtA - 1].type, 'cf_agent_chat_messages');
  assert.ok(!framesA[skipAtA - 1].messages.some((m) => m.id === s.u3.id));
  // Nobody else hears about dropped messages.
  assert.equal(responsesOf(framesA, s.r2).length, 0);
  assert.equal(responsesOf(framesB, s.r3).length, 0);
  assert.ok(!framesA.some((f) => f.type === 'cf_agent_chat_messages' && f.messages.some((m) => m.id === s.u2.id)));
  assert.ok(!framesB.some((f) => f.type === 'cf_agent_chat_messages' && f.messages.some((m) => m.id === s.u3.id)));

  await assertIdle(s.a);
  assert.equal(w.model.requests.length, 1, 'nothing else reached the model');
  const persisted = await getMessages(w.url, AGENT, room);
  assert.deepEqual(persisted.map((m) => m.id), [s.u1.id, s.a1.id]);

  // Once idle, a submit runs normally again.
  const r4 = rid();
  const u4 = userMessage(rid('u4'), 'now it is my turn');
  s.b.send(chatRequest(r4, [...persisted, u4]));
  assert.equal((await terminal(s.b, r4)).outcome, 'completed');
  assert.deepEqual(modelTexts(w.model.requests[1]), [s.u1.parts[0].text, 'now it is my turn']);
});

test('debounce: the surviving submit starts no earlier than the quiet window after the last overlapping submit, and an idle submit starts at once', async (t) => {
  const w = await workerFor(t, { bindings: { MESSAGE_CONCURRENCY: 'debounce:300' } });
  const room = 'cc-debounce';
  const sentAt = Date.now();
  const s = await overlap(w, room, { slow: 'first [tokens:10] [delay:20]' });
  // r1 arrived at an idle agent: no debounce.
  assert.ok(s.r2At - sentAt < 2000);
  let secondAt = 0;
  await waitUntil(() => {
    if (w.model.requests.length >= 2 && !secondAt) secondAt = Date.now();
    return secondAt;
  }, { intervalMs: 2, timeoutMs: TURN_MS, what: 'the surviving turn reaching the model' });
  assert.ok(secondAt >= s.r3At + 300 - 15, `started ${secondAt - s.r3At} ms after the last submit (window 300 ms)`);
  assert.ok(secondAt < s.r3At + 300 + 2000, `started ${secondAt - s.r3At} ms after the last submit`);

  assert.equal((await terminal(s.a, s.r1)).outcome, 'completed');
  const skipped = await terminal(s.b, s.r2);
  assert.equal(skipped.outcome, 'skipped');
  assert.deepEqual(skipped.messageIds, [s.u2.id]);
  assert.equal(responsesOf(s.a.since(s.markA), s.r2).length, 0, 'skip goes to the requester only');
  assert.equal((await terminal(s.a, s.r3)).outcome, 'completed');
  assert.equal(w.model.requests.length, 2);
  const texts = modelTexts(w.model.requests[1]);
  assert.ok(texts.includes('second') && texts.includes('third'));
  await assertIdle(s.a);

  // An idle submit is not debounced.
  const n = w.model.requests.length;
  const r4 = rid();
  const before = Date.now();
  s.b.send(chatRequest(r4, [...(await getMessages(w.url, AGENT, room)), userMessage(rid('u4'), 'quick one')]));
  await waitUntil(() => w.model.requests.length > n, { intervalMs: 2, what: 'idle submit reaching the model' });
  assert.ok(Date.now() - before < 290, `idle submit waited ${Date.now() - before} ms`);
  assert.equal((await terminal(s.b, r4)).outcome, 'completed');
});

test('debounce: a burst of submits from two tabs keeps re-arming the window and only the last one runs', async (t) => {
  const w = await workerFor(t, { bindings: { MESSAGE_CONCURRENCY: 'debounce:300' } });
  const room = 'cc-debounce-burst';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const u1 = userMessage(rid('u'), 'start [tokens:5] [delay:10]');
  const r1 = rid();
  a.send(chatRequest(r1, [u1]));
  await a.waitFor((f) => f.id === r1 && f.body?.includes('text-delta'), TURN_MS);
  const ids = [];
  let lastAt = 0;
  const history = [u1];
  for (let i = 0; i < 4; i++) {
    const c = i % 2 ? a : b;
    const u = userMessage(rid('u'), `burst ${i}`);
    history.push(u);
    const id = rid();
    ids.push([c, id]);
    c.send(chatRequest(id, [...history]));
    lastAt = Date.now();
    await new Promise((r) => setTimeout(r, 120)); // each inside the previous window
  }
  let secondAt = 0;
  await waitUntil(() => {
    if (w.model.requests.length >= 2 && !secondAt) secondAt = Date.now();
    return secondAt;
  }, { intervalMs: 2, timeoutMs: TURN_MS, what: 'the surviving turn' });
  assert.ok(secondAt >= lastAt + 300 - 15, `started ${secondAt - lastAt} ms after the last submit`);
  for (const [c, id] of ids.slice(0, -1)) assert.equal((await terminal(c, id)).outcome, 'skipped');
  const [lastClient, lastId] = ids.at(-1);
  assert.equal((await terminal(lastClient, lastId)).outcome, 'completed');
  assert.equal(w.model.requests.length, 2);
  assert.deepEqual(modelTexts(w.model.requests[1]).filter((x) => x.startsWith('burst')), ['burst 0', 'burst 1', 'burst 2', 'burst 3']);
});

test('clear ends the running turn aborted and every queued turn skipped, told to every tab', async (t) => {
  const w = await workerFor(t, { bindings: { MESSAGE_CONCURRENCY: 'queue' } });
  const room = 'cc-clear';
  const s = await overlap(w, room);
  // r3 came from the other socket: clear only once the agent has accepted it (B sees u3).
  await s.b.waitFor((f) => f.type === 'cf_agent_chat_messages' && f.messages.some((m) => m.id === s.u3.id));
  s.b.send({ type: 'cf_agent_chat_clear' });
  for (const c of [s.a, s.b]) {
    assert.equal((await terminal(c, s.r1)).outcome, 'aborted');
    assert.equal((await terminal(c, s.r2)).outcome, 'skipped');
    assert.equal((await terminal(c, s.r3)).outcome, 'skipped');
  }
  await s.a.waitFor('cf_agent_chat_clear');
  await assertIdle(s.a);
  assert.deepEqual(await getMessages(w.url, AGENT, room), []);
  assert.equal(w.model.requests.length, 1, 'queued turns never reached the model');
});

test('cancelling a queued request removes it; the others still run', async (t) => {
  const w = await workerFor(t, { bindings: { MESSAGE_CONCURRENCY: 'queue' } });
  const room = 'cc-cancel-queued';
  const s = await overlap(w, room);
  s.b.send({ id: s.r2, type: 'cf_agent_chat_request_cancel' });
  const cancelled = await terminal(s.b, s.r2);
  assert.equal(cancelled.outcome, 'aborted');
  assert.equal((await terminal(s.a, s.r1)).outcome, 'completed');
  assert.equal((await terminal(s.a, s.r3)).outcome, 'completed');
  assert.equal(chunkFrames(s.b.since(s.markB), s.r2).length, 0);
  assert.equal(w.model.requests.length, 2);
  assert.equal(requestFor(w.model, 'second').length, 0, 'the cancelled turn never ran');
});

test('a tab connecting while a debounced turn waits is told it is pending, then offered the stream when it starts', async (t) => {
  const w = await workerFor(t, { bindings: { MESSAGE_CONCURRENCY: 'debounce:1500' } });
  const room = 'cc-pending';
  const s = await overlap(w, room, { slow: 'first [tokens:5] [delay:10]', third: 'third [tokens:20] [delay:25]' });
  await terminal(s.a, s.r1);
  await terminal(s.b, s.r2); // superseded: skipped
  assert.equal(w.model.requests.length, 1, 'r3 is still inside its quiet window');

  const c = await connect(w.url, AGENT, room);
  await c.waitFor('cf_agent_mcp_servers');
  assert.deepEqual(c.frames.map((f) => f.type).slice(0, 5), [
    'cf_agent_stream_pending', 'cf_agent_chat_messages', 'cf_agent_identity', 'cf_agent_state', 'cf_agent_mcp_servers',
  ]);
  assert.deepEqual(c.frames[0], { type: 'cf_agent_stream_pending', id: s.r3 });
  assert.equal(c.frames[1].connect, true);
  const probeId = probe(c);
  assert.deepEqual(await c.waitFor((f) => f.probeId === probeId), { type: 'cf_agent_stream_pending', id: s.r3, probeId });

  const offer = await c.waitFor((f) => f.type === 'cf_agent_stream_resuming', TURN_MS);
  assert.deepEqual(offer, { type: 'cf_agent_stream_resuming', id: s.r3 });
  c.send({ type: 'cf_agent_stream_resume_ack', id: s.r3 });
  const done = await terminal(c, s.r3);
  assert.equal(done.outcome, 'completed');
  await terminal(s.a, s.r3); // tab a's socket may deliver the same frames a moment later
  const seen = chunkFrames(c.frames, s.r3);
  assert.ok(seen.length > 20);
  assert.deepEqual(seen.map((f) => f.seq), seen.map((_, i) => i), 'the whole stream, replayed then live');
  assert.deepEqual(seen.map((f) => f.body), chunkFrames(s.a.frames, s.r3).map((f) => f.body));
});

test('clear while a turn waits out its debounce window: requester gets skipped, a parked tab gets a bare resume_none then the clear', async (t) => {
  const w = await workerFor(t, { bindings: { MESSAGE_CONCURRENCY: 'debounce:1500' } });
  const room = 'cc-clear-debounce';
  const s = await overlap(w, room, { slow: 'first [tokens:5] [delay:10]' });
  await terminal(s.a, s.r1);
  await terminal(s.b, s.r2);
  const c = await connect(w.url, AGENT, room);
  await c.waitFor('cf_agent_mcp_servers');
  assert.equal(c.frames[0].type, 'cf_agent_stream_pending', 'c is parked on r3');
  const markA = s.a.mark();
  const markB = s.b.mark();
  const markC = c.mark();
  s.b.send({ type: 'cf_agent_chat_clear' });
  const skipped = await terminal(s.a, s.r3);
  assert.deepEqual(skipped, { type: 'cf_agent_use_chat_response', id: s.r3, body: '', done: true, outcome: 'skipped', messageIds: [s.u2.id, s.u3.id] });
  await s.a.waitFor('cf_agent_chat_clear');
  await c.waitFor('cf_agent_chat_clear');
  await assertIdle(s.b);
  assert.deepEqual(c.since(markC).map((f) => f.type), ['cf_agent_stream_resume_none', 'cf_agent_chat_clear']);
  assert.deepEqual(c.since(markC)[0], { type: 'cf_agent_stream_resume_none' });
  assert.ok(!s.b.since(markB).some(isDone(s.r3)), 'the clearing tab is not told about r3');
  assert.ok(s.a.since(markA).findIndex(isDone(s.r3)) < s.a.since(markA).findIndex((f) => f.type === 'cf_agent_chat_clear'));
  assert.equal(w.model.requests.length, 1);
  assert.deepEqual(await getMessages(w.url, AGENT, room), []);
});

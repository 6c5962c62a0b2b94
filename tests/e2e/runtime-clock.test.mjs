// End-to-end: what only the runtime's own clock brings about, so each test waits for it: a cron
// schedule in a time zone firing each due minute across a restart (the author's schedules of
// DEBUG_TOOLS=1, `…/__debug/author/…`), and the idle eviction local workerd applies to a Durable
// Object after ~10 s while its sockets hibernate: a connection's own state, its tags and readonly
// flag, and open tabs chatting on afterwards (sockets re-adopted from their attachments).
// Each test has its own worker and does next to no work while it waits, so the tests of this file
// run together, and `scripts/test.sh` runs the file beside the other Node tests.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WS from 'ws';
import { AgentClient } from 'agents/client';
import { chatRequest, userMessage, getMessages, isDone, textOf, TEST_BUILD_DIR } from '../support/harness.mjs';
import { workerFor, rid, waitUntil, tab, chunkFrames } from '../support/e2e.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 15000;
const DEBUG = { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR };
/** Longer than local workerd keeps an idle Durable Object (~10 s). */
const IDLE_EVICTION_MS = 12000;
const idle = () => new Promise((r) => setTimeout(r, IDLE_EVICTION_MS));

const authorRoute = (room, name) => `/agents/chat-agent/${room}/__debug/author/${name}`;

async function post(w, room, name, body) {
  const res = await w.fetch(authorRoute(room, name), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text };
}

const kvGet = async (w, room, key) => (await (await w.fetch(`${authorRoute(room, 'kv-get')}?key=${encodeURIComponent(key)}`)).json()).value;
const listSchedules = async (w, room) => (await w.fetch(authorRoute(room, 'schedules'))).json();

/** A stock client on `room` with `query`, ready; every frame it receives is kept. */
async function client(t, w, room, query = {}) {
  const frames = [];
  const c = new AgentClient({ agent: AGENT, name: room, host: new URL(w.url).host, WebSocket: WS, query });
  c.addEventListener('message', (event) => {
    try { frames.push(JSON.parse(event.data)); } catch { /* not JSON */ }
  });
  t.after(() => c.close());
  await c.ready;
  return { c, frames };
}

describe("the runtime's own clock", { concurrency: true }, () => {
  test('a cron schedule in a time zone is read there and fires each due minute, across a restart', { timeout: 200000 }, async (t) => {
    const w = await workerFor(t, DEBUG);
    const room = 'as-cron-zone';
    // 02:30 in Kolkata (UTC+05:30, no daylight saving time) is 21:00 UTC.
    const nightly = { name: 'nightly', callback: 'record', payload: 'nightly', when: { zonedCron: { cron: '30 2 * * *', timeZone: 'Asia/Kolkata' } } };
    const made = await post(w, room, 'schedule', nightly);
    assert.equal(made.status, 200, made.text);
    const minutely = { name: 'minutely', callback: 'record', payload: 'tick', when: { zonedCron: { cron: '* * * * *', timeZone: 'America/New_York' } } };
    assert.equal((await post(w, room, 'schedule', minutely)).status, 200);
    const listed = await listSchedules(w, room);
    const night = listed.find((s) => s.name === 'nightly');
    assert.deepEqual(night.repeat, { zonedCron: { cron: '30 2 * * *', timeZone: 'Asia/Kolkata' } });
    assert.equal(new Date(night.nextAt).getUTCHours(), 21);
    assert.equal(new Date(night.nextAt).getUTCMinutes(), 0);
    const ticks = async (n) => waitUntil(async () => {
      const f = await kvGet(w, room, 'fired');
      return f && f.length >= n ? f : null;
    }, { timeoutMs: 75000, intervalMs: 500, what: `${n} minute tick(s)` });
    assert.deepEqual(await ticks(1), ['tick']);
    await w.restart();
    const after = await ticks(2);
    assert.deepEqual(after.slice(0, 2), ['tick', 'tick'], 'the next minute fired after the restart');
    const unknown = await post(w, room, 'schedule', { name: 'x', callback: 'record', when: { zonedCron: { cron: '0 9 * * *', timeZone: 'Mars/Olympus' } } });
    assert.equal(unknown.status, 400);
    assert.match(unknown.text, /unknown time zone `Mars\/Olympus`/);
  });

  test("a connection's own state outlives the agent's eviction while the socket hibernates", async (t) => {
    const w = await workerFor(t);
    const c = new AgentClient({ agent: AGENT, name: rid('nap'), host: new URL(w.url).host, WebSocket: WS, query: { role: 'editor' } });
    t.after(() => c.close());
    await c.ready;
    await idle();
    const pong = new Promise((resolve) => c.addEventListener('message', (event) => {
      const frame = JSON.parse(event.data);
      if (frame.type === 'pong') resolve(frame);
    }));
    c.send(JSON.stringify({ type: 'ping' }));
    assert.deepEqual(await pong, { type: 'pong', connection: { role: 'editor' } });
  });

  test('tags and the readonly flag outlive an eviction while the sockets hibernate', { timeout: 40000 }, async (t) => {
    const w = await workerFor(t);
    const room = rid('nap');
    const viewer = await client(t, w, room, { role: 'viewer' });
    const staff = await client(t, w, room, { role: 'staff' });
    await idle();
    viewer.c.send(JSON.stringify({ type: 'whoami' }));
    await waitUntil(() => viewer.frames.find((f) => f.type === 'whoami'), { what: 'whoami' });
    assert.deepEqual(viewer.frames.find((f) => f.type === 'whoami').tags, ['viewer']);
    assert.equal(viewer.frames.find((f) => f.type === 'whoami').readonly, true);
    await assert.rejects(viewer.c.call('announce', ['hi', null, 0]), /Connection is readonly/);
    assert.deepEqual(await staff.c.call('announce', ['to staff', 'staff', 0]), { sentTo: 1 });
  });

  test('open tabs keep chatting after the agent sat idle long enough to be evicted (sockets re-adopted from their attachments)', async (t) => {
    const w = await workerFor(t);
    const room = 'room-hibernate';
    const a = await tab(w, room);
    const b = await tab(w, room);
    const id = rid();
    a.send(chatRequest(id, [userMessage(rid('u'), 'before the nap')]));
    await b.waitFor(isDone(id), TURN_MS);
    await idle();
    assert.ok(a.isOpen && b.isOpen, 'hibernated sockets stay open');
    const markA = a.mark();
    const markB = b.mark();
    const id2 = rid();
    const u2 = rid('u');
    b.send(chatRequest(id2, [...(await getMessages(w.url, AGENT, room)), userMessage(u2, 'after the nap')]));
    assert.equal((await b.waitFor(isDone(id2), TURN_MS)).outcome, 'completed');
    await a.waitFor(isDone(id2), TURN_MS);
    const framesA = a.since(markA);
    assert.ok(framesA.some((f) => f.type === 'cf_agent_chat_messages' && f.messages.at(-1)?.id === u2), 'the other tab still gets the user broadcast');
    assert.deepEqual(chunkFrames(framesA, id2), chunkFrames(b.since(markB), id2), 'and every chunk');
    assert.ok(!b.since(markB).some((f) => f.type === 'cf_agent_chat_messages' && f.messages.at(-1)?.id === u2), 'the requester is still recognised (no echo)');
    // Its list matched the store before the nap, as its socket's attachment kept: the turn's end
    // sends it its message as stored, not the transcript.
    assert.ok(!b.since(markB).some((f) => f.type === 'cf_agent_chat_messages'), 'no transcript to the requester');
    assert.ok(b.since(markB).some((f) => f.type === 'cf_agent_message_updated' && f.message.id === u2), 'its message as stored');
    assert.equal(textOf(framesA, id2), 'You said: after the nap');
  });
});

// End-to-end: the author's own storage and schedules on the real runtime, driven through the
// test-only routes, tool and schedule callbacks of DEBUG_TOOLS=1 (`…/__debug/author/…`). Storage:
// an own SQL table and a key-value entry written by a route and by a tool read back after a
// restart, the engine's tables refused, an oversized value refused with the limit named.
// Schedules: one fires after a restart with nothing else waking the agent, a cron schedule is
// listed and cancelled, an interval schedule fires repeatedly, a schedule submits a chat turn
// whose answer is stored, a run cut by a restart runs again and its callback is told attempt 2.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerFor, waitUntil, tab, rid } from '../support/e2e.mjs';
import { chatRequest, userMessage, isDone, getMessages, TEST_BUILD_DIR } from '../support/harness.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 15000;
const DEBUG = { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR };

const route = (room, name) => `/agents/chat-agent/${room}/__debug/author/${name}`;

async function post(w, room, name, body) {
  const res = await w.fetch(route(room, name), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

const sql = (w, room, query, bindings = []) => post(w, room, 'sql', { query, bindings });
const kvGet = async (w, room, key) => (await (await w.fetch(`${route(room, 'kv-get')}?key=${encodeURIComponent(key)}`)).json()).value;
const listSchedules = async (w, room) => (await w.fetch(route(room, 'schedules'))).json();
const textOf = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

test("the author's table and key-value entries survive a restart; engine tables are out of reach; a value over 2 MB is refused", { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'as-storage';
  assert.equal((await sql(w, room, 'CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)')).status, 200);
  assert.equal((await sql(w, room, 'INSERT INTO notes (text) VALUES (?), (?)', ['first', 'chat_ in a binding is fine'])).status, 200);
  assert.equal((await post(w, room, 'kv-put', { key: 'prefs', value: { theme: 'dark', size: 3 } })).status, 200);

  // A tool of a turn writes the key-value store too.
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), '[tool:kv_put:{"key":"from-tool","value":[1,2,3]}]')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed');
  a.close();

  await w.restart();
  const rows = (await sql(w, room, 'SELECT text FROM notes ORDER BY id')).json();
  assert.deepEqual(rows, [{ text: 'first' }, { text: 'chat_ in a binding is fine' }]);
  assert.deepEqual(await kvGet(w, room, 'prefs'), { theme: 'dark', size: 3 });
  assert.deepEqual(await kvGet(w, room, 'from-tool'), [1, 2, 3]);
  assert.equal(await kvGet(w, room, 'missing'), null);

  for (const query of ['DELETE FROM chat_messages', 'SELECT * FROM "chat_config"', 'DROP TABLE [chat_author_kv]', 'SELECT * FROM sqlite_master', 'PRAGMA writable_schema = 1']) {
    const refused = await sql(w, room, query);
    assert.equal(refused.status, 400, query);
    assert.match(refused.text, /statement refused/, query);
  }
  const messages = await getMessages(w.url, AGENT, room);
  assert.equal(messages.length, 2, 'the transcript is untouched');

  const big = 'x'.repeat(2_000_001);
  const tooBig = await post(w, room, 'kv-put', { key: 'big', value: big });
  assert.equal(tooBig.status, 400);
  assert.match(tooBig.text, /the value of `big` is \d+ bytes; the limit is 2000000 bytes/);
  assert.equal(await kvGet(w, room, 'big'), null, 'nothing stored');
  const bigRow = await sql(w, room, 'INSERT INTO notes (text) VALUES (?)', [big]);
  assert.equal(bigRow.status, 400);
  assert.match(bigRow.text, /binding 1 is 2000001 bytes; the limit is 2000000 bytes/);
});

test('a schedule fires after a restart with nothing else waking the agent', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'as-restart';
  const res = await post(w, room, 'schedule', { name: 'once', callback: 'record', payload: { n: 1 }, when: { delay: 1500 } });
  assert.equal(res.status, 200, res.text);
  const { nextAt } = res.json();
  await w.restart();
  // Nothing wakes the agent but its alarm: the first read comes well after the schedule is due.
  await new Promise((r) => setTimeout(r, Math.max(0, nextAt - Date.now()) + 2500));
  const fired = await waitUntil(() => kvGet(w, room, 'fired'), { timeoutMs: 5000, intervalMs: 250, what: 'the schedule to fire' });
  assert.deepEqual(fired, [{ n: 1 }]);
  assert.deepEqual(await listSchedules(w, room), [], 'a one-off is gone once fired');
});

test("a run cut by a restart runs again and the callback is told it is the second attempt", { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'as-attempt';
  assert.equal((await post(w, room, 'kv-put', { key: 'hold_schedules', value: true })).status, 200);
  const res = await post(w, room, 'schedule', { name: 'job', callback: 'attempts', payload: null, when: { delay: 300 } });
  assert.equal(res.status, 200, res.text);
  // The callback recorded its attempt and is still running (held) when the runtime stops.
  const first = await waitUntil(() => kvGet(w, room, 'attempts'), { timeoutMs: 10000, intervalMs: 100, what: 'the first run' });
  assert.deepEqual(first, [1], 'the first run is attempt 1');
  await w.restart();
  const again = await waitUntil(async () => {
    const a = await kvGet(w, room, 'attempts');
    return a && a.length >= 2 ? a : null;
  }, { timeoutMs: 10000, intervalMs: 100, what: 'the run to start again after the restart' });
  assert.deepEqual(again, [1, 2], 'the run cut by the restart ran again as attempt 2');
  assert.equal((await post(w, room, 'kv-put', { key: 'hold_schedules', value: false })).status, 200);
});

test('a cron schedule is listed with its next minute and cancelled', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'as-cron';
  const made = await post(w, room, 'schedule', { name: 'nightly', callback: 'record', payload: { job: 'digest' }, when: { cron: '30 2 * * *' } });
  assert.equal(made.status, 200, made.text);
  const [listed] = await listSchedules(w, room);
  assert.equal(listed.name, 'nightly');
  assert.deepEqual(listed.repeat, { cron: '30 2 * * *' });
  assert.deepEqual(listed.payload, { job: 'digest' });
  const next = new Date(listed.nextAt);
  assert.equal(next.getUTCHours(), 2);
  assert.equal(next.getUTCMinutes(), 30);
  assert.ok(listed.nextAt > Date.now() && listed.nextAt <= Date.now() + 86_400_000);
  assert.deepEqual((await post(w, room, 'cancel', { name: 'nightly' })).json(), { cancelled: true });
  assert.deepEqual(await listSchedules(w, room), []);
  assert.deepEqual((await post(w, room, 'cancel', { name: 'nightly' })).json(), { cancelled: false });
  const bad = await post(w, room, 'schedule', { name: 'bad', callback: 'record', when: { cron: '61 * * * *' } });
  assert.equal(bad.status, 400);
  assert.match(bad.text, /bad cron expression: the minute field allows 0-59/);
});

test('an interval schedule fires repeatedly until cancelled', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'as-every';
  assert.equal((await post(w, room, 'schedule', { name: 'tick', callback: 'record', payload: 'tick', when: { every: 1 } })).status, 200);
  const fired = await waitUntil(async () => {
    const f = await kvGet(w, room, 'fired');
    return f && f.length >= 3 ? f : null;
  }, { timeoutMs: 15000, intervalMs: 200, what: 'three ticks' });
  assert.deepEqual(fired.slice(0, 3), ['tick', 'tick', 'tick']);
  assert.deepEqual((await post(w, room, 'cancel', { name: 'tick' })).json(), { cancelled: true });
  const count = (await kvGet(w, room, 'fired')).length;
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal((await kvGet(w, room, 'fired')).length, count, 'no tick after the cancel');
});

test('a schedule submits a chat turn whose answer is stored and streamed to an open tab', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'as-chat';
  const a = await tab(w, room);
  assert.equal((await post(w, room, 'schedule', { name: 'remind', callback: 'chat', payload: { text: 'time for the weekly report' }, when: { delay: 500 } })).status, 200);
  const stored = await waitUntil(async () => {
    const ms = await getMessages(w.url, AGENT, room);
    return ms.length === 2 && textOf(ms[1]).trim() ? ms : null;
  }, { timeoutMs: TURN_MS, intervalMs: 200, what: 'the scheduled turn and its answer' });
  assert.equal(textOf(stored[0]), 'time for the weekly report');
  assert.equal(stored[1].role, 'assistant');
  assert.match(textOf(stored[1]), /weekly report/, 'the scripted model answered it');
  await a.waitFor((f) => f.type === 'cf_agent_use_chat_response' && f.done, TURN_MS);
  a.close();
});

test('a cron schedule may name its weekdays and months', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'as-cron-names';
  const made = await post(w, room, 'schedule', { name: 'standup', callback: 'record', when: { cron: '15 9 * JAN-DEC mon-FRI' } });
  assert.equal(made.status, 200, made.text);
  const [listed] = await listSchedules(w, room);
  const next = new Date(listed.nextAt);
  assert.equal(next.getUTCHours(), 9);
  assert.equal(next.getUTCMinutes(), 15);
  assert.ok(next.getUTCDay() >= 1 && next.getUTCDay() <= 5, `a weekday: ${next.toISOString()}`);
  assert.ok(listed.nextAt > Date.now() && listed.nextAt <= Date.now() + 4 * 86_400_000);
  const bad = await post(w, room, 'schedule', { name: 'bad', callback: 'record', when: { cron: '0 9 * * MONDAY' } });
  assert.equal(bad.status, 400);
  assert.match(bad.text, /day of week/);
});

test("the object's first request, and the first after a restart, wait for the start (on_start and the test build's own)", { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const started = async (room) => (await (await w.fetch(`/agents/chat-agent/${room}/__debug/started`)).json()).started;
  assert.equal(await started('as-start'), true, 'the first request reached the object after its start');
  await w.restart();
  assert.equal(await started('as-start'), true, 'and again after a restart');
  assert.equal(await started('as-start-2'), true, 'another object too');
});

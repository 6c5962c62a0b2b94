// The log a turn leaves in the runtime's console (what `wrangler tail` and the `wrangler dev`
// console show), read from workerd's structured log output through Miniflare: a turn that is
// retried once writes its start, the retry and its end, one line each; `LOG_LEVEL=warn` keeps
// only the retry; a refused frame is one warning.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, userMessage, isDone } from '../support/harness.mjs';
import { workerFor, rid, tab } from '../support/e2e.mjs';

const TURN_MS = 20000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A worker whose console lines are collected in `.logs` ({level, message}). */
async function loggedWorker(t, bindings = {}) {
  const logs = [];
  const w = await workerFor(t, {
    bindings,
    miniflare: { handleStructuredLogs: (log) => logs.push(log) },
  });
  w.logs = logs;
  return w;
}

/** The agent's lines about `id` (written after the frames that end the turn: wait a little). */
async function linesAbout(w, text) {
  await sleep(200);
  return w.logs.filter((l) => l.message.includes(text));
}

async function retriedTurn(w, room) {
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'flaky provider [http-once:503]')]));
  const done = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'completed');
  return id;
}

test('a retried turn writes its start, the retry and its end, one line each', async (t) => {
  const w = await loggedWorker(t);
  const room = 'room-logs';
  const id = await retriedTurn(w, room);
  const lines = await linesAbout(w, `request=${id}`);
  const messages = lines.map((l) => l.message);
  assert.equal(lines.length, 3, messages.join('\n'));
  const prefix = `[chat-agent ${room}] `;
  assert.ok(messages.every((m) => m.startsWith(prefix)), messages.join('\n'));
  assert.match(messages[0], /turn started request=\S+ trigger=submit queued=0/);
  assert.match(messages[1], /model retry request=\S+ attempt=1 delay_ms=1000 reason="[^"]*503/);
  assert.equal(lines[1].level, 'warn');
  assert.match(messages[2], /turn ended request=\S+ outcome=completed steps=1 ms=\d+ streamed_bytes=\d+ tokens~\d+$/);
});

test('LOG_LEVEL=warn keeps the retry and drops the start and end lines', async (t) => {
  const w = await loggedWorker(t, { LOG_LEVEL: 'warn' });
  const id = await retriedTurn(w, 'room-logs-warn');
  const lines = await linesAbout(w, `request=${id}`);
  assert.deepEqual(lines.map((l) => l.level), ['warn'], lines.map((l) => l.message).join('\n'));
  assert.match(lines[0].message, /model retry/);
});

test('a refused frame is one warning naming the connection and the reason', async (t) => {
  const w = await loggedWorker(t);
  const pk = `pk-${rid()}`;
  const a = await tab(w, 'room-logs-refused', { pk });
  a.send('{"type":"cf_agent_use_chat_request","id":"x","init":{"method":"POST","body":"{not json"}}');
  await a.waitFor((f) => f.error === true || f.type === 'cf_agent_chat_error');
  const lines = await linesAbout(w, `frame refused conn=${pk}`);
  assert.equal(lines.length, 1, w.logs.map((l) => l.message).join('\n'));
  assert.equal(lines[0].level, 'warn');
});

test('a request id or _pk with a newline cannot forge a log line', async (t) => {
  const w = await loggedWorker(t);
  const room = 'room-logs-forged';
  const forged = `[chat-agent ${room}] turn ended request=forged outcome=completed steps=1`;
  const pk = `pk-${rid()}\n${forged}`;
  const a = await tab(w, room, { pk });
  const id = `r-${rid()} trigger=forged\n${forged}`;
  a.send(chatRequest(id, [userMessage(rid('u'), 'hello')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed', 'the turn ran under its id');
  a.send('{"type":"cf_agent_use_chat_request","id":"x","init":{"method":"POST","body":"{not json"}}');
  await a.waitFor((f) => f.error === true || f.type === 'cf_agent_chat_error');
  await sleep(200);
  const lines = w.logs.map((l) => l.message);
  const ours = lines.filter((m) => m.includes('forged'));
  assert.ok(ours.length >= 3, `the start, the end and the refused frame: ${ours.join(' | ')}`);
  for (const line of ours) {
    assert.ok(!/[\r\n]/.test(line), `one line: ${JSON.stringify(line)}`);
  }
  assert.ok(ours.some((m) => /turn started request="r-[^"]*" trigger=submit queued=/.test(m)), 'the id is quoted, the real fields follow it');
  assert.ok(ours.some((m) => /frame refused conn="pk-/.test(m)), 'the _pk is quoted');
});

test('a provider\'s error text goes to the log; the tabs and the stored error get only its status class', async (t) => {
  const w = await loggedWorker(t, { MODEL_ERROR_DETAIL: '' });
  const room = 'room-logs-detail';
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'please fail [http:401]')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'error');
  const error = a.frames.find((f) => f.id === id && f.error === true);
  assert.equal(error.body, 'The model provider answered 401 Unauthorized.');
  // The stored error record, as a tab that joins later is shown it.
  const c = await tab(w, room);
  c.send({ type: 'cf_agent_stream_resume_request', probeId: 'p1' });
  await c.waitFor((f) => f.type === 'cf_agent_stream_resuming' && f.id === id, TURN_MS);
  c.send({ type: 'cf_agent_stream_resume_ack', id });
  const replayed = await c.waitFor((f) => f.id === id && f.done === true, TURN_MS);
  assert.equal(replayed.body, error.body);
  const frames = JSON.stringify([...a.frames, ...c.frames]);
  assert.ok(!frames.includes('scripted error'), 'the provider\'s words reach no tab');
  await sleep(200);
  const logged = w.logs.filter((l) => l.message.includes('model call failed') && l.message.includes('scripted error 401'));
  assert.equal(logged.length, 1, w.logs.map((l) => l.message).join('\n'));
  assert.equal(logged[0].level, 'warn');
});

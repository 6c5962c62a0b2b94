// End-to-end: a storage write that fails mid-turn on the real runtime (DEBUG_TOOLS=1's
// fail-next-message-write route makes the store refuse the answer's write inside its
// transaction). Both tabs see the turn end with an error instead of completing; the write's whole
// batch is rolled back, so the stream's record and chunk log stay in the SQLite file; and after
// the runtime restarts, the answer is settled from them and finished.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, userMessage, getMessages, isDone, TEST_BUILD_DIR } from '../support/harness.mjs';
import { workerFor, rid, chunkFrames, waitUntil, tab } from '../support/e2e.mjs';
import { sqliteFiles, querySqlite } from '../support/sqlite-files.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 20000;
const words = (n) => Array.from({ length: n }, (_, i) => `w${i + 1}`).join(' ');
const textOf = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

/** Rows of `sql` in the database that has any (the one agent of the test wrote). */
async function rowsOf(persistDir, sql) {
  for (const file of await sqliteFiles(persistDir)) {
    const tables = querySqlite(file, "SELECT name FROM sqlite_master WHERE name = 'chat_streams'");
    if (tables.length === 0) continue;
    const rows = querySqlite(file, sql);
    if (rows.length) return rows;
  }
  return [];
}

test('a refused answer write ends the turn with an error for every tab, keeps the chunk log, and a restart finishes the answer', async (t) => {
  const w = await workerFor(t, { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR, miniflare: { unsafePreventEviction: true } });
  const room = 'wf-answer';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, '[tokens:30][delay:60] a story')]));
  await a.waitFor((f) => chunkFrames([f], id).length > 0 && f.body.includes('text-delta'), TURN_MS);
  const armed = await w.fetch(`/agents/chat-agent/${room}/__debug/fail-next-message-write`, { method: 'POST' });
  assert.equal(armed.status, 200);

  for (const c of [a, b]) {
    const done = await c.waitFor(isDone(id), TURN_MS);
    assert.ok(done.error === true || done.outcome === 'error', `the turn failed: ${JSON.stringify(done)}`);
    assert.ok(c.frames.some((f) => f.id === id && f.error === true && String(f.body).includes('could not save')), 'the error says why');
    assert.ok(!c.frames.some((f) => isDone(id)(f) && f.outcome === 'completed'), 'no completed end');
  }
  // The batch was rolled back: no answer row, and the stream's record and chunk log are stored.
  assert.deepEqual((await rowsOf(w.persistDir, 'SELECT id FROM chat_messages')).map((r) => r.id), [uid]);
  assert.deepEqual((await rowsOf(w.persistDir, 'SELECT request_id FROM chat_streams')).map((r) => r.request_id), [id]);
  const chunks = await rowsOf(w.persistDir, `SELECT first_seq FROM chat_stream_chunks WHERE request_id = '${id}'`);
  assert.ok(chunks.length > 0, 'the chunk log stays');
  // What the live agent serves is what is stored: a page loaded now shows no unsaved answer
  // (which the restart below would change).
  assert.deepEqual((await getMessages(w.url, AGENT, room)).map((m) => m.id), [uid], 'get-messages serves what is stored');
  const joining = await tab(w, room);
  const snapshot = joining.frames.find((f) => f.type === 'cf_agent_chat_messages');
  assert.deepEqual(snapshot.messages.map((m) => m.id), [uid], 'so does a tab that connects');
  joining.close();

  await w.restart();
  const messages = await waitUntil(async () => {
    const ms = await getMessages(w.url, AGENT, room);
    return ms.length === 2 && textOf(ms[1]) === words(30) ? ms : null;
  }, { timeoutMs: TURN_MS, intervalMs: 200, what: 'the answer settled and finished after the restart' });
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
  assert.deepEqual(await rowsOf(w.persistDir, 'SELECT request_id FROM chat_streams'), [], 'nothing left open');

  // The agent carries on.
  const c = await tab(w, room);
  const next = rid();
  c.send(chatRequest(next, [...messages, userMessage(rid('u'), 'and then?')]));
  const done = await c.waitFor(isDone(next), TURN_MS);
  assert.equal(done.outcome, 'completed');
});

test('the write-failure route answers only POST: any other method is refused and arms nothing', async (t) => {
  const w = await workerFor(t, { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR });
  const room = 'wf-method';
  for (const method of ['GET', 'PUT', 'DELETE']) {
    const res = await w.fetch(`/agents/chat-agent/${room}/__debug/fail-next-message-write`, { method });
    assert.equal(res.status, 405, method);
  }
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'hello')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed', 'no write was refused');
  assert.equal((await getMessages(w.url, AGENT, room)).length, 2);
});

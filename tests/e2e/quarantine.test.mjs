// End-to-end: rows that no longer decode on the real runtime. While the runtime is stopped, the
// agent's SQLite file is damaged — a config row (the turn queue) that is not JSON, and the record
// of a stream cut mid-answer replaced by one that cannot be read. After the restart the agent
// answers, both rows are in `chat_quarantine` with the reason, and the unreadable stream is
// settled: its record and its chunk rows are gone.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chatRequest, userMessage, getMessages, isDone } from '../support/harness.mjs';
import { workerFor, rid, chunkFrames, waitUntil, tab } from '../support/e2e.mjs';
import { sqliteFiles, querySqlite, execSqlite, rowCount } from '../support/sqlite-files.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 20000;

/** The database file of the agent that has a stream open. */
async function agentFile(persistDir) {
  for (const file of await sqliteFiles(persistDir)) {
    const named = querySqlite(file, "SELECT name FROM sqlite_master WHERE name = 'chat_streams'");
    if (named.length && querySqlite(file, 'SELECT request_id FROM chat_streams').length) return file;
  }
  throw new Error('no agent database with an open stream');
}

test('a corrupt config row and an unreadable stream record written while stopped are quarantined and the agent answers', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-quarantine-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const room = 'q-corrupt';
  const first = await workerFor(t, { persistDir: dir });
  const a = await tab(first, room);
  const cut = rid();
  a.send(chatRequest(cut, [userMessage(rid('u'), '[tokens:60][delay:100] a long story')]));
  await waitUntil(() => chunkFrames(a.frames, cut).length >= 5, { timeoutMs: TURN_MS, what: 'the answer streaming' });
  await first.close(); // the runtime stops mid-answer: the stream stays open in the file

  const file = await agentFile(dir);
  assert.ok(querySqlite(file, `SELECT COUNT(*) AS n FROM chat_stream_chunks WHERE request_id = '${cut}'`)[0].n > 0);
  execSqlite(file, "INSERT OR REPLACE INTO chat_config (key, value) VALUES ('queue', '{not json')");
  execSqlite(file, `UPDATE chat_streams SET record = '{"v":1,"requestId":5}' WHERE request_id = '${cut}'`);

  const w = await workerFor(t, { persistDir: dir });
  const b = await tab(w, room);
  const stored = await getMessages(w.url, AGENT, room);
  const id = rid();
  b.send(chatRequest(id, [...stored, userMessage(rid('u'), 'are you there?')]));
  const done = await b.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'completed');
  const messages = await getMessages(w.url, AGENT, room);
  assert.equal(messages.at(-1).parts.find((p) => p.type === 'text').text, 'You said: are you there?');

  const rows = querySqlite(file, 'SELECT source, key, reason, value FROM chat_quarantine ORDER BY id');
  assert.deepEqual(rows.map((r) => [r.source, r.key]), [['chat_config', 'queue'], ['chat_streams', cut]]);
  assert.equal(rows[0].value, '{not json');
  assert.ok(rows.every((r) => r.reason.length > 0), 'each with its reason');
  assert.deepEqual(querySqlite(file, 'SELECT request_id FROM chat_streams'), [], 'the stream is settled');
  assert.deepEqual(querySqlite(file, `SELECT first_seq FROM chat_stream_chunks WHERE request_id = '${cut}'`), [], 'its chunks are removed');

  // Moved once: a second start finds nothing more to quarantine.
  await w.restart();
  await getMessages(w.url, AGENT, room);
  assert.equal(querySqlite(file, 'SELECT COUNT(*) AS n FROM chat_quarantine')[0].n, 2);
});

test('a message row far back that is not JSON is left out of the transcript frames (which stay JSON) and quarantined when read', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-quarantine-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const room = 'q-old-row';
  const first = await workerFor(t, { persistDir: dir });
  const a = await tab(first, room);
  // More than the in-memory window (64 messages): the oldest rows are read from SQLite.
  for (let i = 0; i < 10; i++) {
    const id = rid();
    a.send(chatRequest(id, Array.from({ length: 9 }, (_, j) => userMessage(rid('u'), `q${i}.${j}`))));
    assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed');
  }
  const before = await getMessages(first.url, AGENT, room);
  assert.equal(before.length, 100);
  await first.close();

  let file;
  for (const f of await sqliteFiles(dir)) {
    if (querySqlite(f, "SELECT name FROM sqlite_master WHERE name = 'chat_messages'").length) file = f;
  }
  const victim = before[3].id;
  execSqlite(file, `UPDATE chat_messages SET body = '{"id":"${victim}", broken' WHERE id = '${victim}'`);

  const w = await workerFor(t, { persistDir: dir });
  const b = await tab(w, room);
  const connectFrame = b.frames.find((f) => f.type === 'cf_agent_chat_messages');
  const ids = connectFrame.messages.map((m) => m.id);
  assert.equal(ids.length, 99, 'every other message is in the connect frame');
  assert.ok(!ids.includes(victim));
  assert.deepEqual(ids, before.map((m) => m.id).filter((id) => id !== victim), 'in order');

  // A second tab gets the turn's end as a transcript (the requester gets message updates).
  const watcher = await tab(w, room);
  const id = rid();
  const from = watcher.frames.length;
  watcher.cursor = from;
  b.cursor = b.frames.length;
  b.send(chatRequest(id, [userMessage(rid('u'), 'still there?')]));
  assert.equal((await b.waitFor(isDone(id), TURN_MS)).outcome, 'completed');
  await watcher.waitFor(isDone(id), TURN_MS);
  const turnEnd = watcher.frames.slice(from).filter((f) => f.type === 'cf_agent_chat_messages').at(-1);
  assert.equal(turnEnd.messages.length, 101, 'the turn-end frame too');
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.length, 101, 'get-messages leaves it out');
  const rows = querySqlite(file, 'SELECT source, key FROM chat_quarantine');
  assert.deepEqual(rows.map((r) => [r.source, r.key]), [['chat_messages', victim]]);
});

test('a move to the quarantine that rolls back is not reported as done', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-quarantine-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const room = 'q-rollback';
  const first = await workerFor(t, { persistDir: dir });
  const a = await tab(first, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'hello')]));
  await a.waitFor(isDone(id), TURN_MS);
  await first.close();

  // While stopped: an unreadable config row, and a table that refuses to let it go, so its move
  // (copied to the quarantine, then deleted) fails halfway and is rolled back.
  const [file] = (await sqliteFiles(dir)).filter((f) => querySqlite(f, "SELECT name FROM sqlite_master WHERE name = 'chat_config'").length);
  execSqlite(file, "INSERT OR REPLACE INTO chat_config (key, value) VALUES ('queue', '{not json')");
  execSqlite(file, "CREATE TRIGGER keep_queue BEFORE DELETE ON chat_config WHEN old.key = 'queue' BEGIN SELECT RAISE(ABORT, 'refused'); END");

  const logs = [];
  const w = await workerFor(t, { persistDir: dir, miniflare: { handleStructuredLogs: (log) => logs.push(log) } });
  await getMessages(w.url, AGENT, room).catch(() => null);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(rowCount(file, 'chat_quarantine'), 0, 'the move was rolled back');
  assert.deepEqual(querySqlite(file, "SELECT value FROM chat_config WHERE key = 'queue'"), [{ value: '{not json' }]);
  const said = logs.filter((l) => l.message.includes('quarantined'));
  assert.deepEqual(said, [], 'no line says a row was quarantined');
});

test('a clear deletes the quarantined rows with the rest of the conversation', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-quarantine-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const room = 'q-clear';
  const first = await workerFor(t, { persistDir: dir });
  const a = await tab(first, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'my card number is 4242')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed');
  const [question] = await getMessages(first.url, AGENT, room);
  await first.close();
  let file;
  for (const f of await sqliteFiles(dir)) {
    if (querySqlite(f, "SELECT name FROM sqlite_master WHERE name = 'chat_messages'").length) file = f;
  }
  execSqlite(file, `UPDATE chat_messages SET body = '{"id":"${question.id}", "text":"my card number is 4242", broken' WHERE id = '${question.id}'`);

  const w = await workerFor(t, { persistDir: dir });
  const b = await tab(w, room);
  await getMessages(w.url, AGENT, room);
  assert.equal(querySqlite(file, 'SELECT COUNT(*) AS n FROM chat_quarantine')[0].n, 1, 'the row was quarantined');
  b.send({ type: 'cf_agent_chat_clear' });
  await waitUntil(() => querySqlite(file, 'SELECT COUNT(*) AS n FROM chat_quarantine')[0].n === 0, { timeoutMs: TURN_MS, what: 'the quarantine emptied' });
  const left = rowCount(file, 'chat_pieces');
  assert.equal(left, 0, 'no piece of it is left');
  const next = rid();
  b.send(chatRequest(next, [userMessage(rid('u'), 'hello again')]));
  assert.equal((await b.waitFor(isDone(next), TURN_MS)).outcome, 'completed', 'the agent carries on');
});

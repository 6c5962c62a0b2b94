// End-to-end: upgrading a stored agent. tests/fixtures/db-312ec6c/ holds the Durable Object
// SQLite files written by the release of commit 312ec6c (made by
// tests/fixtures/make-312ec6c-db.mjs); each test copies them to a temp dir, opens them with the
// current build and checks that what that release stored survives the schema migration and
// carries on: a finished transcript, a client tool call waiting for the browser, an approval
// waiting for a person, and a stream cut mid-answer with two turns queued behind it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chatRequest, userMessage, getMessages, isDone, textOf } from '../support/harness.mjs';
import { sqliteFiles, querySqlite, execSqlite } from '../support/sqlite-files.mjs';
import { workerFor, rid, probeAnswer as probeShared, followContinuation as followShared, toolPart, waitUntil, toolMessages, tab } from '../support/e2e.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 20000;
const FIXTURE = fileURLToPath(new URL('../fixtures/db-312ec6c/', import.meta.url));
const manifest = JSON.parse(await readFile(join(FIXTURE, 'manifest.json'), 'utf8'));
const words = (n) => Array.from({ length: n }, (_, i) => `w${i + 1}`).join(' ');
const textParts = (m) => m.parts.filter((p) => p.type === 'text');

/** The current build on a copy of the 312ec6c database. */
async function upgraded(t) {
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-migration-'));
  // Miniflare keeps Durable Object databases under <persist>/do/.
  await cp(FIXTURE, join(dir, 'do'), { recursive: true });
  t.after(() => rm(dir, { recursive: true, force: true }));
  return workerFor(t, { persistDir: dir });
}

const probeAnswer = (c) => probeShared(c, TURN_MS);

/** Follow the continuation a tab's answer started: ACK its offer and wait for its end. */
const followContinuation = (b) => followShared(b, { probeMs: TURN_MS, turnMs: TURN_MS });

test('a transcript stored by release 312ec6c reads back unchanged and the conversation goes on', async (t) => {
  const w = await upgraded(t);
  const room = 'fx-transcript';
  const stored = manifest.rooms[room].messages;
  assert.deepEqual(await getMessages(w.url, AGENT, room), stored);
  const a = await tab(w, room);
  const id = rid();
  const u = userMessage(rid('u'), 'and now?');
  a.send(chatRequest(id, [...stored, u]));
  const done = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'completed');
  const messages = await getMessages(w.url, AGENT, room);
  assert.deepEqual(messages.slice(0, stored.length), stored, 'the old messages keep their place');
  assert.equal(messages.length, stored.length + 2);
  assert.equal(textParts(messages.at(-1)).map((p) => p.text).join(''), 'You said: and now?');
  // The model saw the stored history, tool round trip included.
  const body = w.model.requests.at(-1);
  assert.ok(body.messages.some((m) => m.role === 'tool' && String(m.content).includes('Paris')), 'the stored tool result reached the model');

  // The database now carries this release's schema version (4: chat_submissions), and a restart
  // migrates nothing again.
  const versionOf = async () => {
    const files = await sqliteFiles(w.persistDir);
    return files.map((f) => {
      const meta = querySqlite(f, "SELECT name FROM sqlite_master WHERE name = 'chat_meta'").length > 0;
      return meta ? Number(querySqlite(f, "SELECT value FROM chat_meta WHERE key = 'schema_version'")[0]?.value) : 0;
    }).sort();
  };
  // Only the objects that woke were migrated: this one, and the cut stream's (its durable alarm
  // was due); the two others wait for their own wake.
  assert.deepEqual(await versionOf(), [0, 0, 9, 9]);
  // Versions 5 and 6 indexed the tool calls already stored (the transcript's weather call among them).
  const indexed = (await sqliteFiles(w.persistDir))
    .filter((f) => querySqlite(f, "SELECT name FROM sqlite_master WHERE name = 'chat_tool_calls'").length > 0)
    .flatMap((f) => querySqlite(f, 'SELECT tool_call_id FROM chat_tool_calls'));
  const storedCalls = stored.flatMap((m) => m.parts.filter((p) => p.toolCallId).map((p) => p.toolCallId));
  assert.ok(storedCalls.length > 0 && storedCalls.every((id) => indexed.some((r) => r.tool_call_id === id)), 'stored tool calls are indexed');
  await w.restart();
  assert.deepEqual(await getMessages(w.url, AGENT, room), messages, 'unchanged by a second wake');
});

test('a client tool call left waiting by release 312ec6c is answered after the upgrade and drives the continuation', async (t) => {
  const w = await upgraded(t);
  const room = 'fx-client-tool';
  const { toolCallId, toolName } = manifest.rooms[room];
  const b = await tab(w, room);
  assert.equal(toolPart(await getMessages(w.url, AGENT, room), toolCallId).state, 'input-available');
  b.send({ type: 'cf_agent_tool_result', toolCallId, toolName, output: { timezone: 'Europe/Oslo' }, autoContinue: true });
  const { id, end } = await followContinuation(b);
  assert.equal(end.outcome, 'completed');
  // (The answer may end before the ACK: the end-of-turn transcript carries it then.)
  const said = textOf(b.frames, id) || JSON.stringify(b.frames.filter((f) => f.type === 'cf_agent_chat_messages').at(-1));
  assert.ok(said.includes('Europe/Oslo'), 'the continuation used the result');
  const body = w.model.requests.at(-1);
  assert.ok(toolMessages(body).some((m) => m.tool_call_id === toolCallId && String(m.content).includes('Europe/Oslo')));
  assert.ok(body.tools.some((x) => (x.function?.name ?? x.name) === toolName), 'the client tools stored by the old release are still offered');
  const messages = await getMessages(w.url, AGENT, room);
  assert.equal(toolPart(messages, toolCallId).state, 'output-available');
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant', 'assistant']);
  assert.ok(textParts(messages[2]).some((p) => p.text.includes('Europe/Oslo')));
});

test('an approval left pending by release 312ec6c can be given after the upgrade and the tool runs', async (t) => {
  const w = await upgraded(t);
  const room = 'fx-approval';
  const { toolCallId } = manifest.rooms[room];
  const b = await tab(w, room);
  assert.equal(toolPart(await getMessages(w.url, AGENT, room), toolCallId).state, 'approval-requested');
  b.send({ type: 'cf_agent_tool_approval', toolCallId, approved: true, autoContinue: true });
  const { id, end } = await followContinuation(b);
  assert.equal(end.outcome, 'completed');
  assert.ok(b.frames.some(isDone(id)));
  const results = toolMessages(w.model.requests.at(-1)).filter((m) => m.tool_call_id === toolCallId);
  assert.deepEqual(results.map((m) => JSON.parse(m.content)), [{ deleted: 'notes.txt' }], 'the approved tool ran once');
  const part = toolPart(await getMessages(w.url, AGENT, room), toolCallId);
  assert.equal(part.state, 'output-available');
  assert.deepEqual(part.output, { deleted: 'notes.txt' });
});

test('a stream cut under release 312ec6c is settled after the upgrade and the turns queued behind it are answered', async (t) => {
  // The cut answer keeps its partial text, and each queued turn answers its own question in order
  // (release 312ec6c itself lost the queued turns' places on a restart: its first queued turn ran
  // with the later question in its context and the second was never answered).
  const w = await upgraded(t);
  const room = 'fx-stream';
  const { assistantId, userIds, tokens } = manifest.rooms[room];
  const messages = await waitUntil(async () => {
    const ms = await getMessages(w.url, AGENT, room);
    return ms.length === 6 && ms.every((m) => m.parts.every((p) => p.state !== 'streaming')) ? ms : null;
  }, { timeoutMs: TURN_MS, intervalMs: 200, what: 'the cut answer settled and the queue answered' });
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
  assert.deepEqual([messages[0].id, messages[2].id, messages[4].id], userIds, 'the queued messages kept their order');
  assert.equal(messages[1].id, assistantId, 'the cut answer kept its id');
  const partial = textParts(messages[1]).map((p) => p.text).join('');
  assert.ok(partial.length > 0 && words(tokens).startsWith(partial), `the partial answer is kept: ${partial}`);
  assert.equal(textParts(messages[3]).map((p) => p.text).join(''), 'You said: second question');
  assert.equal(textParts(messages[5]).map((p) => p.text).join(''), 'You said: third question');
  const lastUser = (r) => r.messages.filter((m) => m.role === 'user').map((m) => m.content).at(-1);
  assert.deepEqual(w.model.requests.map(lastUser), ['second question', 'third question'],
    'each queued turn saw its own question last');
  const c = await tab(w, room);
  const answer = await probeAnswer(c);
  assert.equal(answer.type, 'cf_agent_stream_resume_none', 'nothing left open');
});

test('a tool call stored in a message split over pieces before the tool call index existed is indexed by the upgrade, and its result lands', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-migration-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const room = 'split-call';
  const first = await workerFor(t, { persistDir: dir });
  const a = await tab(first, room);
  const id = rid();
  const timezone = { name: 'getUserTimezone', description: "The user's IANA timezone, read from the browser.", parameters: { type: 'object', properties: {} } };
  a.send(chatRequest(id, [userMessage(rid('u'), "what's my timezone?")], { clientTools: [timezone] }));
  await a.waitFor(isDone(id), TURN_MS);
  const waiting = (await getMessages(first.url, AGENT, room)).at(-1);
  const call = waiting.parts.find((p) => p.toolCallId);
  assert.equal(call.state, 'input-available');
  await first.close();

  // As a release before the index (schema 4) left it: the answer split over two pieces, and
  // a conversation that went on past the in-memory window after it.
  const [file] = (await sqliteFiles(dir)).filter((f) => querySqlite(f, "SELECT name FROM sqlite_master WHERE name = 'chat_messages'").length);
  // (An agent made by this release has no chat_pieces before a value is split; older releases made it.)
  execSqlite(file, 'CREATE TABLE IF NOT EXISTS chat_pieces (kind TEXT NOT NULL, key TEXT NOT NULL, sub INTEGER NOT NULL, n INTEGER NOT NULL, piece TEXT NOT NULL, PRIMARY KEY (kind, key, sub, n))');
  execSqlite(file, `INSERT INTO chat_pieces (kind, key, sub, n, piece) SELECT 'message', id, 0, 1, substr(body, 41) FROM chat_messages WHERE id = '${waiting.id}'`);
  execSqlite(file, `UPDATE chat_messages SET body = substr(body, 1, 40), pieces = 2 WHERE id = '${waiting.id}'`);
  const later = Array.from({ length: 40 }, (_, i) => [
    `('later-u${i}', (SELECT MAX(seq) FROM chat_messages) + 1, '{"id":"later-u${i}","role":"user","parts":[{"type":"text","text":"q${i}"}]}')`,
    `('later-a${i}', (SELECT MAX(seq) FROM chat_messages) + 1, '{"id":"later-a${i}","role":"assistant","parts":[{"type":"text","text":"a${i}"}]}')`,
  ]).flat();
  for (const row of later) execSqlite(file, `INSERT INTO chat_messages (id, seq, body) VALUES ${row}`);
  execSqlite(file, "DROP TABLE chat_tool_calls; UPDATE chat_meta SET value = '4' WHERE key = 'schema_version'");

  const w = await workerFor(t, { persistDir: dir });
  const b = await tab(w, room);
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.length, 82, 'the split message reads back whole, with what followed');
  assert.deepEqual(querySqlite(file, `SELECT message_id FROM chat_tool_calls WHERE tool_call_id = '${call.toolCallId}'`), [{ message_id: waiting.id }], 'the upgrade indexed its call');
  b.send({ type: 'cf_agent_tool_result', toolCallId: call.toolCallId, toolName: 'getUserTimezone', output: { timezone: 'Europe/Oslo' }, autoContinue: false });
  const answered = await waitUntil(async () => {
    const part = toolPart(await getMessages(w.url, AGENT, room), call.toolCallId);
    return part?.state === 'output-available' ? part : null;
  }, { timeoutMs: 5000, intervalMs: 100, what: 'the result on the call far back' });
  assert.deepEqual(answered.output, { timezone: 'Europe/Oslo' });
});

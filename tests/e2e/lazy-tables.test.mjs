// End-to-end: tables an agent never uses cost it nothing. A new agent's SQLite (read from the
// persist dir after the runtime stopped) holds, after a chat turn, only the tables a turn writes;
// each other table is made by its first write — a client tool call, a submission, an MCP server, a
// key-value entry of the author's, a schedule, a quarantined row — and what was written reads back
// after a restart.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN, TEST_BUILD_DIR, chatRequest, userMessage, isDone, getMessages } from '../support/harness.mjs';
import { workerFor, tab, rid, waitUntil, toolPart } from '../support/e2e.mjs';
import { sqliteFiles, querySqlite, execSqlite, rowCount, storeTables } from '../support/sqlite-files.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 20000;
const DEBUG = { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR };
const json = { 'content-type': 'application/json' };
const TURN_TABLES = ['chat_config', 'chat_messages', 'chat_meta', 'chat_stream_chunks', 'chat_streams'];

async function tempDir(t) {
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-lazy-tables-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The database file of the one agent that has a transcript. */
async function agentFile(dir) {
  const files = (await sqliteFiles(dir)).filter((f) => querySqlite(f, "SELECT name FROM sqlite_master WHERE name = 'chat_messages'").length);
  assert.equal(files.length, 1, 'one agent database');
  return files[0];
}

test('a new agent holds only the tables a chat turn writes', { timeout: 40000 }, async (t) => {
  const dir = await tempDir(t);
  const w = await workerFor(t, { persistDir: dir });
  const room = rid('lazy-plain');
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'hello there')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed');
  assert.equal((await getMessages(w.url, AGENT, room)).length, 2);
  await w.close();

  const file = await agentFile(dir);
  assert.deepEqual(storeTables(file), TURN_TABLES);
  assert.equal(rowCount(file, 'chat_messages'), 2);
});

test('each table made by its first write works, and what it holds reads back after a restart', { timeout: 90000 }, async (t) => {
  const dir = await tempDir(t);
  const room = rid('lazy-uses');
  const base = `/agents/chat-agent/${room}`;
  const calls = (w) => ({
    post: (path, body, headers = {}) => w.fetch(`${base}${path}`, { method: 'POST', headers: { ...json, ...headers }, body: JSON.stringify(body ?? {}) }),
    get: async (path, headers = {}) => (await w.fetch(`${base}${path}`, { headers })).json(),
  });

  const first = await workerFor(t, { persistDir: dir });
  const one = calls(first);
  const a = await tab(first, room);
  // A submission from the agent's own route.
  const submitted = await one.post('/submit', { text: 'a report from code', idempotencyKey: 'lazy-1' });
  assert.equal(submitted.status, 202);
  const { id: submission } = await submitted.json();
  await waitUntil(async () => (await one.get(`/submissions/${submission}`)).status === 'completed', { timeoutMs: TURN_MS, what: 'the submission completed' });
  // An MCP server added at run time (unreachable: it is stored all the same).
  const added = await one.post('/mcp-servers', { name: 'Later', url: 'http://127.0.0.1:9/mcp' }, ADMIN);
  assert.ok(added.status < 300, `MCP server added: ${added.status}`);
  // Last, a client tool call left waiting: the tool call index.
  const asked = rid();
  const timezone = { name: 'getUserTimezone', description: "The user's IANA timezone, read from the browser.", parameters: { type: 'object', properties: {} } };
  a.send(chatRequest(asked, [userMessage(rid('u'), "what's my timezone?")], { clientTools: [timezone] }));
  await a.waitFor(isDone(asked), TURN_MS);
  const call = (await getMessages(first.url, AGENT, room)).at(-1).parts.find((p) => p.toolCallId);
  assert.equal(call?.state, 'input-available', 'the call waits for the browser');
  await first.close();

  // The author's key-value store and a schedule (through the test build's routes).
  const debug = await workerFor(t, { ...DEBUG, persistDir: dir });
  const author = calls(debug);
  assert.equal((await author.post('/__debug/author/kv-put', { key: 'prefs', value: { theme: 'dark' } })).status, 200);
  const scheduled = await author.post('/__debug/author/schedule', { name: 'nightly', callback: 'record', payload: { job: 'digest' }, when: { cron: '30 2 * * *' } });
  assert.equal(scheduled.status, 200, await scheduled.text());
  await debug.close();

  const file = await agentFile(dir);
  const made = storeTables(file);
  for (const table of ['chat_tool_calls', 'chat_submissions', 'chat_mcp_servers', 'chat_author_kv']) {
    assert.ok(made.includes(table), `${table} made by its first write: ${made}`);
  }
  assert.ok(!made.includes('chat_quarantine'), 'nothing quarantined yet');
  // While stopped: a message row that no longer parses.
  const [question] = querySqlite(file, "SELECT id FROM chat_messages WHERE body LIKE '%a report from code%'");
  execSqlite(file, `UPDATE chat_messages SET body = '{broken' WHERE id = '${question.id}'`);

  const second = await workerFor(t, { ...DEBUG, persistDir: dir });
  const two = calls(second);
  const b = await tab(second, room);
  assert.equal((await two.get(`/submissions/${submission}`)).status, 'completed', 'the submission is still known');
  assert.deepEqual((await two.get('/mcp-servers', ADMIN)).map((s) => [s.id, s.declared]), [['later', false]]);
  assert.deepEqual((await two.get('/__debug/author/kv-get?key=prefs')).value, { theme: 'dark' });
  assert.deepEqual((await two.get('/__debug/author/schedules')).map((s) => s.name), ['nightly']);
  const stored = await getMessages(second.url, AGENT, room);
  assert.ok(!stored.some((m) => m.id === question.id), 'the broken row is left out');
  b.send({ type: 'cf_agent_tool_result', toolCallId: call.toolCallId, toolName: 'getUserTimezone', output: { timezone: 'Europe/Oslo' }, autoContinue: false });
  const answered = await waitUntil(async () => {
    const part = toolPart(await getMessages(second.url, AGENT, room), call.toolCallId);
    return part?.state === 'output-available' ? part : null;
  }, { timeoutMs: 5000, intervalMs: 100, what: 'the result on the waiting call' });
  assert.deepEqual(answered.output, { timezone: 'Europe/Oslo' });
  await second.close();
  assert.equal(rowCount(file, 'chat_quarantine'), 1, 'the broken row was moved to the quarantine table');

  const third = await workerFor(t, { persistDir: dir });
  const c = await tab(third, room);
  const next = rid();
  c.send(chatRequest(next, [userMessage(rid('u'), 'still there?')]));
  assert.equal((await c.waitFor(isDone(next), TURN_MS)).outcome, 'completed', 'the agent carries on');
  assert.equal(rowCount(file, 'chat_quarantine'), 1);
});

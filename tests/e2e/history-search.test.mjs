// End-to-end on the real runtime: search over the whole stored history (SQLite FTS5 in the Durable
// Object). A history of 5,000 messages is sent as tails (only the new messages each time); the model
// sees only the newest 40 (MODEL_CONTEXT_MESSAGES), so a fact from the start of the chat is outside
// its window. The demo agent with DEMO_MEMORY=1 offers the built-in `search_context` tool: the
// scripted model calls it, and the tool's result, which the next step's request carries, holds the
// old message's excerpt with the matched words marked. The index follows a clear: only what was
// stored after it is found. The index is kept only by an agent that searches: one that does not
// writes no index rows (no FTS table at all), and the history it stored is indexed when the agent
// opens searching; so is a history stored before the index existed (schema 8, a message split over
// pieces among it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { userMessage, sendAndWait } from '../support/harness.mjs';
import { workerFor, tab, rid } from '../support/e2e.mjs';
import { sqliteFiles, querySqlite, execSqlite } from '../support/sqlite-files.mjs';

const NEEDLE = 'My locker code is 4817, next to the zebra poster.';

function batch(from, count) {
  const messages = [];
  for (let i = from; i < from + count; i++) {
    // A client's own assistant messages are not stored (only the agent writes those): the
    // history is the user's messages, each batch answered by the agent.
    const text = i === 4 ? NEEDLE : `filler message number ${i} about the weather and lunch`;
    messages.push({ id: `h-${i}`, role: 'user', parts: [{ type: 'text', text }] });
  }
  return messages;
}

test('search_context finds a message outside the model\'s window of a 5,000-message history', { timeout: 240000 }, async (t) => {
  const w = await workerFor(t, { bindings: { DEMO_MEMORY: '1', MODEL_CONTEXT_MESSAGES: '40' } });
  const room = 'search-1';
  const c = await tab(w, room);
  for (let from = 0; from < 5000; from += 1666) {
    const tail = batch(from, Math.min(1666, 5000 - from));
    const { done } = await sendAndWait(c, rid(), tail, {}, 60000);
    assert.equal(done.outcome, 'completed');
  }
  const before = w.model.requests.length;
  const ask = userMessage(rid('u'), 'what was my locker code? [tool:search_context:{"query":"locker zebra"}]');
  const { done } = await sendAndWait(c, rid(), [ask], {}, 60000);
  assert.equal(done.outcome, 'completed');
  const [searching, answering] = w.model.requests.slice(before);
  assert.ok(searching.tools.some((tool) => tool.function.name === 'search_context'), 'the tool is offered');
  assert.ok(!JSON.stringify(searching.messages).includes('4817'), 'the old message is outside the window');
  const result = answering.messages.at(-1);
  assert.equal(result.role, 'tool');
  const hits = JSON.parse(result.content).hits;
  // The question itself (stored before the search) matches too.
  const old = hits.find((hit) => hit.messageId === 'h-4');
  assert.ok(old, JSON.stringify(hits));
  assert.equal(old.role, 'user');
  assert.match(old.excerpt, /\[locker\] code is 4817.*\[zebra\]/);
  assert.ok(hits.length <= 5, 'five matches unless asked for more');
  assert.ok(result.content.length < 9000, 'the answer is bounded');

  c.send({ type: 'cf_agent_chat_clear' });
  const after = w.model.requests.length;
  const again = userMessage(rid('u'), 'search again [tool:search_context:{"query":"locker"}]');
  const second = await sendAndWait(c, rid(), [again], {}, 60000);
  assert.equal(second.done.outcome, 'completed');
  const cleared = w.model.requests.slice(after)[1].messages.at(-1);
  const found = JSON.parse(cleared.content).hits.map((hit) => hit.messageId);
  assert.deepEqual(found, [again.id], 'after a clear only the new question is found');
});

test('a history stored before the index is indexed when the agent opens, split messages too', { timeout: 120000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-search-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const room = 'search-migrated';
  const first = await workerFor(t, { persistDir: dir, bindings: { DEMO_MEMORY: '1' } });
  const c = await tab(first, room);
  const old = [
    { id: 'old-1', role: 'user', parts: [{ type: 'text', text: 'The spare key is under the blue flowerpot by the door.' }] },
    { id: 'old-2', role: 'user', parts: [{ type: 'text', text: 'Remember the walrus on the fridge magnet.' }] },
  ];
  assert.equal((await sendAndWait(c, rid(), old, {}, 20000)).done.outcome, 'completed');
  await first.close();

  // As a release before the index left it: no chat_search, schema 8, one message split.
  const [file] = (await sqliteFiles(dir)).filter((f) => querySqlite(f, "SELECT name FROM sqlite_master WHERE name = 'chat_messages'").length);
  // (An agent made by this release has no chat_pieces before a value is split; older releases made it.)
  execSqlite(file, 'CREATE TABLE IF NOT EXISTS chat_pieces (kind TEXT NOT NULL, key TEXT NOT NULL, sub INTEGER NOT NULL, n INTEGER NOT NULL, piece TEXT NOT NULL, PRIMARY KEY (kind, key, sub, n))');
  execSqlite(file, "INSERT INTO chat_pieces (kind, key, sub, n, piece) SELECT 'message', id, 0, 1, substr(body, 41) FROM chat_messages WHERE id = 'old-2'");
  execSqlite(file, "UPDATE chat_messages SET body = substr(body, 1, 40), pieces = 2 WHERE id = 'old-2'");
  execSqlite(file, "DROP TABLE chat_search; UPDATE chat_meta SET value = '8' WHERE key = 'schema_version'");

  const w = await workerFor(t, { persistDir: dir, bindings: { DEMO_MEMORY: '1' } });
  const d = await tab(w, room);
  const ask = userMessage(rid('u'), 'where? [tool:search_context:{"query":"flowerpot walrus"}]');
  assert.equal((await sendAndWait(d, rid(), [ask], {}, 20000)).done.outcome, 'completed');
  const result = w.model.requests.at(-1).messages.at(-1);
  const found = JSON.parse(result.content).hits.map((hit) => hit.messageId);
  // The scripted model's answers echo what it was told, so they match as well.
  for (const id of ['old-1', 'old-2']) assert.ok(found.includes(id), `${id} is found: ${found}`);
});

test('an agent that does not search keeps no index; turned on later, it finds what was stored before', { timeout: 120000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-search-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const room = 'search-later';
  const plain = await workerFor(t, { persistDir: dir });
  const c = await tab(plain, room);
  const said = userMessage(rid('u'), 'The boat is moored at pier nineteen beside the lighthouse.');
  assert.equal((await sendAndWait(c, rid(), [said], {}, 20000)).done.outcome, 'completed');
  await plain.close();
  const files = (await sqliteFiles(dir)).filter((f) => querySqlite(f, "SELECT name FROM sqlite_master WHERE name = 'chat_messages'").length);
  assert.equal(files.length, 1);
  assert.deepEqual(querySqlite(files[0], "SELECT name FROM sqlite_master WHERE name LIKE 'chat_search%'"), [], 'no index tables without search');

  const searching = await workerFor(t, { persistDir: dir, bindings: { DEMO_MEMORY: '1' } });
  const d = await tab(searching, room);
  const ask = userMessage(rid('u'), 'where? [tool:search_context:{"query":"lighthouse pier"}]');
  assert.equal((await sendAndWait(d, rid(), [ask], {}, 20000)).done.outcome, 'completed');
  const result = searching.model.requests.at(-1).messages.at(-1);
  const found = JSON.parse(result.content).hits.map((hit) => hit.messageId);
  assert.ok(found.includes(said.id), `the earlier message is found: ${found}`);
});

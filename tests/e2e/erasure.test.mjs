// End-to-end: erasing an agent on the real runtime. The demo's `POST …/destroy` (behind the
// operator's MCP_ADMIN_TOKEN) calls `AgentHandle::destroy`: every open socket is closed with 4410
// `agent destroyed`, and the object's SQLite is read afterwards through the test build's
// `GET …/__debug/storage-rows` (rows per table, key-value entries, the alarm): nothing of the agent is left, and a
// tab that connects again finds an empty conversation and the initial state.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, TEST_BUILD_DIR, getMessages, sendAndWait, userMessage } from '../support/harness.mjs';
import { workerFor, tab, rid, waitUntil } from '../support/e2e.mjs';

const DEBUG = { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR };
const json = { 'content-type': 'application/json' };

test('destroy erases every row, schedule, alarm and MCP server and closes every socket', { timeout: 40000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = rid('erase');
  const base = `/agents/chat-agent/${room}`;
  const post = (path, body, headers = {}) =>
    w.fetch(`${base}${path}`, { method: 'POST', headers: { ...json, ...headers }, body: JSON.stringify(body ?? {}) });
  const report = async () => {
    const r = await w.fetch(`${base}/__debug/storage-rows`);
    return r.ok ? r.json() : null;
  };

  const a = await tab(w, room);
  const b = await tab(w, room, { query: { role: 'staff' } });
  await sendAndWait(a, rid(), [userMessage(rid(), 'remember me')], {}, 15000);
  a.send({ type: 'cf_agent_state', state: { topic: 'secret' } });
  await b.waitFor((f) => f.type === 'cf_agent_state' && f.state?.topic === 'secret');
  assert.equal((await post('/__debug/author/kv-put', { key: 'k', value: 'v' })).status, 200);
  const created = await post('/__debug/author/sql', { query: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)' });
  assert.equal(created.status, 200, await created.text());
  assert.equal((await post('/__debug/author/sql', { query: 'INSERT INTO notes (text) VALUES (?)', bindings: ['x'] })).status, 200);
  a.send({ type: 'rpc', id: 'r1', method: 'announce', args: ['later', null, 3600] });
  await a.waitFor((f) => f.type === 'rpc' && f.id === 'r1' && f.success);
  const added = await post('/mcp-servers', { name: 'gone', url: 'http://127.0.0.1:9/mcp' }, ADMIN);
  assert.ok(added.status < 300, `MCP server added: ${added.status}`);

  const before = await report();
  for (const table of ['chat_messages', 'notes', 'chat_mcp_servers']) {
    assert.ok(before.tables[table] > 0, `${table} holds rows before: ${JSON.stringify(before.tables)}`);
  }
  assert.ok(before.alarm, 'the schedule set the alarm');

  const stranger = await post('/destroy', {});
  assert.equal(stranger.status, 401, 'no token, no erasure');
  const destroyed = await post('/destroy', {}, ADMIN);
  assert.equal(destroyed.status, 200, await destroyed.text());
  assert.deepEqual(await a.waitForClose(), { code: 4410, reason: 'agent destroyed' });
  assert.deepEqual(await b.waitForClose(), { code: 4410, reason: 'agent destroyed' });

  const after = await waitUntil(report, { what: 'the reset agent', timeoutMs: 10000, intervalMs: 100 });
  assert.equal(after.alarm, null, 'no alarm is left');
  assert.equal(after.kvKeys, 0, 'no key-value entry is left');
  assert.equal(after.tables.notes, undefined, "the author's table is gone");
  const left = Object.entries(after.tables).filter(([name, rows]) => rows > 0 && name !== 'chat_meta');
  assert.deepEqual(left, [], `no row is left: ${JSON.stringify(after.tables)}`);

  const fresh = await tab(w, room);
  const history = fresh.frames.find((f) => f.type === 'cf_agent_chat_messages');
  assert.deepEqual(history?.messages ?? [], []);
  assert.deepEqual(fresh.frames.find((f) => f.type === 'cf_agent_state')?.state, {});
  assert.deepEqual(await getMessages(w.url, 'ChatAgent', room), []);
  const kv = await (await w.fetch(`${base}/__debug/author/kv-get?key=k`)).json();
  assert.equal(kv.value, null);
});

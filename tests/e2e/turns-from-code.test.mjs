// End-to-end: what the agent's own code gets from its turns, on the real runtime with the scripted
// model, through the test-only routes of DEBUG_TOOLS=1 (`…/__debug/author/…`), whose
// `on_chat_response` records each report it is given in the agent's key-value store (and waits
// first while `hold_responses` is set). A report cut by a runtime restart while the hook runs is
// delivered after the restart, once; `run_turn` from a route answers with the stored answer while
// a tab watches the turn stream; `cancel_request` stops a tab's running turn by its request id;
// an awaited `before_tool_call` blocks a call, an awaited `after_tool_call` rewrites a result and
// an awaited `on_chat_error` sends a failed model call again, each after reading the agent's storage.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerFor, waitUntil, tab, rid } from '../support/e2e.mjs';
import { chatRequest, userMessage, isDone, isResponse, getMessages, TEST_BUILD_DIR } from '../support/harness.mjs';

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

const kvGet = async (w, room, key) => (await (await w.fetch(`${route(room, 'kv-get')}?key=${encodeURIComponent(key)}`)).json()).value;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const textOf = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

test('on_chat_response cut by a restart while it runs is delivered after the restart, once', { timeout: 90000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'tc-outbox';
  assert.equal((await post(w, room, 'kv-put', { key: 'hold_responses', value: true })).status, 200);
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'remember this')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed');
  await sleep(300);
  assert.equal(await kvGet(w, room, 'responses'), null, 'the hook is still running (held)');
  a.close();

  await w.restart();
  assert.equal((await post(w, room, 'kv-put', { key: 'hold_responses', value: false })).status, 200);
  const delivered = await waitUntil(async () => kvGet(w, room, 'responses'), { timeoutMs: 10000, what: 'the report after the restart' });
  const [messages] = [await getMessages(w.url, AGENT, room)];
  assert.equal(delivered.length, 1);
  assert.equal(delivered[0].requestId, id);
  assert.equal(delivered[0].outcome, 'completed');
  assert.equal(delivered[0].answerId, messages[1].id, 'the stored answer');

  // Returned: not owed any more, so a further restart delivers nothing again.
  await sleep(300);
  await w.restart();
  await kvGet(w, room, 'hold_responses');
  await sleep(1000);
  assert.equal((await kvGet(w, room, 'responses')).length, 1, 'delivered once');
});

test('run_turn from a route answers with the stored answer while a tab sees the turn stream', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'tc-run-turn';
  const a = await tab(w, room);
  const res = await post(w, room, 'run-turn', { text: 'tell me the time' });
  assert.equal(res.status, 200, res.text);
  const result = res.json();
  assert.equal(result.status, 'completed');
  assert.equal(textOf(result.message), 'You said: tell me the time');
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.length, 2);
  assert.equal(stored[1].id, result.message.id, 'the answer returned is the stored one');
  const done = await a.waitFor(isDone(result.requestId), TURN_MS);
  assert.equal(done.outcome, 'completed', 'the tab saw the turn end');
  const delivered = await waitUntil(async () => kvGet(w, room, 'responses'), { what: 'the report' });
  assert.equal(delivered[0].requestId, result.requestId);
});

test("cancel_request stops a tab's running turn by its request id", { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'tc-cancel';
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'wait for it [hang]')]));
  await a.waitFor(isResponse(id), TURN_MS);
  const res = await post(w, room, 'cancel-request', { requestId: id });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.json(), { cancelled: true });
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'aborted');
  const again = await post(w, room, 'cancel-request', { requestId: id });
  assert.deepEqual(again.json(), { cancelled: false }, 'nothing left under that id');
});

test('an awaited before_tool_call that reads storage blocks a call before it runs', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'tc-decide';
  assert.equal((await post(w, room, 'kv-put', { key: 'blocked_tools', value: ['kv_put'] })).status, 200);
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), '[tool:kv_put:{"key":"from-tool","value":1}]')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed');
  assert.equal(await kvGet(w, room, 'from-tool'), null, 'the tool never ran');
  const stored = await getMessages(w.url, AGENT, room);
  const part = stored[1].parts.find((p) => p.type === 'tool-kv_put');
  assert.equal(part.state, 'output-error');
  assert.equal(part.errorText, 'kv_put is blocked by the test list');
  assert.match(textOf(stored[1]), /kv_put is blocked by the test list/, 'the model read why');

  // Off the list, the same call runs.
  assert.equal((await post(w, room, 'kv-put', { key: 'blocked_tools', value: [] })).status, 200);
  const again = rid();
  a.send(chatRequest(again, [userMessage(rid('u'), '[tool:kv_put:{"key":"from-tool","value":2}]')]));
  assert.equal((await a.waitFor(isDone(again), TURN_MS)).outcome, 'completed');
  assert.equal(await kvGet(w, room, 'from-tool'), 2);
});

test('an awaited after_tool_call that reads storage rewrites the result the model reads', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'tc-rewrite';
  const note = { note: 'rewritten from the agent storage' };
  assert.equal((await post(w, room, 'kv-put', { key: 'rewritten_results', value: { kv_put: note } })).status, 200);
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), '[tool:kv_put:{"key":"from-tool","value":1}]')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed');
  assert.equal(await kvGet(w, room, 'from-tool'), 1, 'the tool ran');
  const stored = await getMessages(w.url, AGENT, room);
  const part = stored[1].parts.find((p) => p.type === 'tool-kv_put');
  assert.equal(part.state, 'output-available');
  assert.deepEqual(part.output, note, 'the stored result is the rewrite');
  assert.match(textOf(stored[1]), /kv_put=\{"note":"rewritten from the agent storage"\}/, 'the model read the rewrite');

  // With nothing stored for the tool, its own result stands.
  assert.equal((await post(w, room, 'kv-put', { key: 'rewritten_results', value: {} })).status, 200);
  const again = rid();
  a.send(chatRequest(again, [userMessage(rid('u'), '[tool:kv_put:{"key":"from-tool","value":2}]')]));
  assert.equal((await a.waitFor(isDone(again), TURN_MS)).outcome, 'completed');
  const later = await getMessages(w.url, AGENT, room);
  const own = later[3].parts.find((p) => p.type === 'tool-kv_put');
  assert.deepEqual(own.output, { stored: 'from-tool' });
});

test('an awaited on_chat_error that reads storage sends a failed model call again', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'tc-chat-error';
  assert.equal((await post(w, room, 'kv-put', { key: 'retry_errors', value: true })).status, 200);
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), `[http-once:400] first ${id}`)]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed', 'the retry answered');
  const stored = await getMessages(w.url, AGENT, room);
  assert.match(textOf(stored[1]), /You said: .*first/);

  // Left failing, the same failure ends the turn.
  assert.equal((await post(w, room, 'kv-put', { key: 'retry_errors', value: false })).status, 200);
  const again = rid();
  a.send(chatRequest(again, [userMessage(rid('u'), `[http-once:400] second ${again}`)]));
  assert.equal((await a.waitFor(isDone(again), TURN_MS)).outcome, 'error');
});

// A turn that asks for structured output has its answer checked against the schema on the real
// runtime: a tab's chat request whose custom body carries a schema (the test build's
// `before_turn` turns `structuredOutput` into the turn's `structured_output`), the scripted
// model answering JSON that follows it (as a model in strict mode does: the scripted model answers
// the simplest value that follows the schema it was sent, or the exact text of `[json:…]`) (the turn completes, the stored answer is the JSON) or
// does not (the turn ends `error` with the path and reason, the socket stays open).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerFor, tab, rid } from '../support/e2e.mjs';
import { chatRequest, userMessage, isDone, getMessages, TEST_BUILD_DIR } from '../support/harness.mjs';

const TURN_MS = 15000;
const DEBUG = { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR };
const schema = {
  type: 'object',
  properties: { id: { type: 'string' }, total: { type: 'number' } },
  required: ['id'],
  additionalProperties: false,
};

test('a structured answer that follows the schema completes; one that does not fails the turn, saying where', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = 'so-check';
  const a = await tab(w, room);
  const good = rid();
  a.send(chatRequest(good, [userMessage(rid('u'), '[json:{"id":"A-1","total":12.5}]')], { structuredOutput: schema }));
  assert.equal((await a.waitFor(isDone(good), TURN_MS)).outcome, 'completed');
  const stored = await getMessages(w.url, 'ChatAgent', room);
  assert.deepEqual(JSON.parse(stored.at(-1).parts.find((p) => p.type === 'text').text), { id: 'A-1', total: 12.5 });

  const bad = rid();
  a.send(chatRequest(bad, [userMessage(rid('u'), '[json:{"id":7}]')], { structuredOutput: schema }));
  const end = await a.waitFor(isDone(bad), TURN_MS);
  assert.equal(end.outcome, 'error');
  const error = a.frames.find((f) => f.type === 'cf_agent_use_chat_response' && f.id === bad && f.error);
  assert.ok(error, 'an error frame for the request');
  assert.match(error.body, /does not follow the schema `test_output`: \$\.id: expected string, found integer/);

  const prose = rid();
  a.send(chatRequest(prose, [userMessage(rid('u'), '[json:just words]')], { structuredOutput: schema }));
  assert.equal((await a.waitFor(isDone(prose), TURN_MS)).outcome, 'error', 'an answer that is not JSON fails too');

  // A model honouring the schema (the scripted one answers the simplest value that follows it).
  const honoured = rid();
  a.send(chatRequest(honoured, [userMessage(rid('u'), 'order A-2?')], { structuredOutput: schema }));
  assert.equal((await a.waitFor(isDone(honoured), TURN_MS)).outcome, 'completed');

  const plain = rid();
  a.send(chatRequest(plain, [userMessage(rid('u'), 'no schema this time')]));
  assert.equal((await a.waitFor(isDone(plain), TURN_MS)).outcome, 'completed', 'a turn without a schema is not checked');
  a.close();
});

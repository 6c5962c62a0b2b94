// End-to-end hardening: hostile model output against the real built worker under
// Miniflare, driven by the scripted model server's directives: a stream that errors mid-way, a
// stream always cut without a finish (continued until the recovery budget is spent), tool-call arguments that are not JSON, an unknown tool name, a
// model that calls tools forever (stopped by max_steps), and an endless stream (stopped by the
// MODEL_STALL_TIMEOUT_MS stall timeout). Every case ends with the normal terminal frame and the
// agent answers the next turn normally.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, userMessage, getMessages, isDone, textOf } from '../support/harness.mjs';
import { workerFor, rid, typesOf, chunkFrames, toolMessages, responsesOf, tab } from '../support/e2e.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 15000;

/** One turn as useAgentChat sends it (full stored transcript + a new user message). */
async function turn(client, w, room, text) {
  const history = await getMessages(w.url, AGENT, room);
  const id = rid();
  const uid = rid('u');
  const mark = client.mark();
  const requestsBefore = w.model.requests.length;
  client.send(chatRequest(id, [...history, userMessage(uid, text)]));
  const done = await client.waitFor(isDone(id), TURN_MS);
  return { id, uid, done, frames: client.since(mark), requests: w.model.requests.slice(requestsBefore) };
}

/** The error frame (error:true, not terminal) of request `id`. */
function errorFrame(frames, id) {
  const errors = responsesOf(frames, id).filter((f) => f.error);
  assert.equal(errors.length, 1, `one error frame: ${JSON.stringify(errors)}`);
  assert.equal(errors[0].done, false);
  return errors[0];
}

/** The agent still answers a plain turn on the same socket after the hostile one. */
async function assertHealthy(client, w, room) {
  const next = await turn(client, w, room, 'are you ok');
  assert.equal(next.done.outcome, 'completed');
  assert.equal(textOf(next.frames, next.id), 'You said: are you ok');
  const stored = await getMessages(w.url, AGENT, room);
  assert.deepEqual(stored.slice(-2).map((m) => m.role), ['user', 'assistant']);
  assert.equal(stored.at(-2).id, next.uid);
  const ids = stored.map((m) => m.id);
  assert.equal(new Set(ids).size, ids.length, 'no duplicate ids');
}

test('a stream that reports an error mid-way ends the turn with a readable error frame and an error outcome', async (t) => {
  const w = await workerFor(t);
  const room = 'model-stream-error';
  const c = await tab(w, room);
  const { id, done, frames } = await turn(c, w, room, 'break please [stream-error]');
  assert.equal(textOf(frames, id), 'You said: ', 'the words before the error were streamed');
  const error = errorFrame(frames, id);
  assert.match(error.body, /scripted stream failure/);
  assert.equal(done.outcome, 'error');
  assert.ok(frames.indexOf(error) < frames.indexOf(done));
  assert.ok(c.isOpen);
  await assertHealthy(c, w, room);
});

test('a stream that is always cut without a finish or [DONE] is continued until the recovery budget is spent, then fails readably', async (t) => {
  const w = await workerFor(t);
  const room = 'model-truncate';
  const c = await tab(w, room);
  const { id, done, frames } = await turn(c, w, room, 'cut me off [truncate]');
  assert.equal(done.outcome, 'recovering', 'the cut request hands over to a recovery');
  assert.deepEqual(responsesOf(frames, id).filter((f) => f.error), [], 'no error on the cut request');
  const failed = await c.waitFor((f) => f.type === 'cf_agent_use_chat_response' && f.error === true, TURN_MS);
  assert.match(failed.body, /could not recover|model stream|Model stream/i);
  await c.waitFor((f) => f.type === 'cf_agent_chat_recovering' && f.recovering === false, TURN_MS);
  assert.ok(c.isOpen);
  await assertHealthy(c, w, room);
});

test('tool-call arguments that are not JSON become an output-error the model reads, and the turn goes on', async (t) => {
  const w = await workerFor(t);
  const room = 'model-bad-args';
  const c = await tab(w, room);
  const { id, done, frames, requests } = await turn(c, w, room, 'weather? [tool:get_weather:{"city":]');
  assert.equal(done.outcome, 'completed');
  const chunks = chunkFrames(frames, id).map((f) => JSON.parse(f.body));
  const inputError = chunks.find((ch) => ch.type === 'tool-input-error');
  assert.ok(inputError, `a tool-input-error chunk: ${typesOf(frames, id)}`);
  assert.equal(inputError.toolName, 'get_weather');
  assert.match(inputError.errorText, /Invalid input for tool 'get_weather'/);
  assert.ok(!typesOf(frames, id).includes('tool-output-available'), 'the tool never ran');
  // The model was called again and saw the error as the tool's result.
  assert.equal(requests.length, 2);
  const [toolMsg] = toolMessages(requests[1]);
  assert.equal(toolMsg.tool_call_id, inputError.toolCallId);
  assert.match(toolMsg.content, /Invalid input for tool 'get_weather'/);
  assert.match(textOf(frames, id), /^Tool results: get_weather=Invalid input/);
  const stored = await getMessages(w.url, AGENT, room);
  const part = stored.at(-1).parts.find((p) => p.type === 'tool-get_weather');
  assert.equal(part.state, 'output-error');
  assert.ok(c.isOpen);
  await assertHealthy(c, w, room);
});

test('an unknown tool name becomes a tool-input-error the model reads, and the turn goes on', async (t) => {
  const w = await workerFor(t);
  const room = 'model-unknown-tool';
  const c = await tab(w, room);
  const { id, done, frames, requests } = await turn(c, w, room, 'do it [tool:no_such_tool:{}]');
  assert.equal(done.outcome, 'completed');
  const chunks = chunkFrames(frames, id).map((f) => JSON.parse(f.body));
  const inputError = chunks.find((ch) => ch.type === 'tool-input-error');
  assert.ok(inputError);
  assert.equal(inputError.toolName, 'no_such_tool');
  assert.match(inputError.errorText, /unavailable tool 'no_such_tool'/);
  assert.equal(requests.length, 2);
  assert.match(toolMessages(requests[1])[0].content, /unavailable tool 'no_such_tool'/);
  assert.match(textOf(frames, id), /^Tool results: no_such_tool=Model tried to call unavailable tool/);
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.at(-1).parts.find((p) => p.type === 'tool-no_such_tool')?.state, 'output-error');
  await assertHealthy(c, w, room);
});

test('a model that calls tools forever is stopped after max_steps (10 model calls) and the turn completes', async (t) => {
  const w = await workerFor(t);
  const room = 'model-loop';
  const c = await tab(w, room);
  const { id, done, frames, requests } = await turn(c, w, room, 'spin [loop-tools]');
  assert.equal(done.outcome, 'completed');
  assert.equal(requests.length, 10, 'exactly max_steps model calls');
  const types = typesOf(frames, id);
  assert.equal(types.filter((x) => x === 'start-step').length, 10);
  assert.equal(types.filter((x) => x === 'tool-output-available').length, 10);
  const finish = chunkFrames(frames, id).map((f) => JSON.parse(f.body)).at(-1);
  assert.equal(finish.type, 'finish');
  assert.equal(finish.finishReason, 'tool-calls');
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.at(-1).parts.filter((p) => p.type === 'tool-get_weather').length, 10);
  await assertHealthy(c, w, room);
});

test('an endless stream is failed by the stall timeout (MODEL_STALL_TIMEOUT_MS) with an error naming the stall, then the next turn works', async (t) => {
  const w = await workerFor(t, { bindings: { MODEL_STALL_TIMEOUT_MS: '1500' } });
  const room = 'model-hang';
  const c = await tab(w, room);
  const started = Date.now();
  const { id, done, frames } = await turn(c, w, room, 'never finish [hang]');
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 1400 && elapsed < 10000, `failed after ${elapsed} ms`);
  assert.equal(textOf(frames, id), 'You said: never ', 'what arrived before the stall was streamed');
  const error = errorFrame(frames, id);
  assert.match(error.body, /stall/i);
  assert.match(error.body, /1\.5 s/);
  assert.equal(done.outcome, 'error');
  assert.ok(c.isOpen);
  await assertHealthy(c, w, room);
});

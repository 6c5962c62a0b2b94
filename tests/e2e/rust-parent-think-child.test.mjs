// A Rust parent calling a JavaScript child over Durable Object RPC: the demo's Coordinator (Rust)
// delegates to a real @cloudflare/think agent (`ThinkChild`, another worker in the same session,
// reached through a binding with `script_name`) with `subagent::chat`, executing the child's
// client tools itself, and hands it submissions through `AgentStub`. The model of both is
// the scripted server; the Coordinator's tools are driven by `[tool:…]` directives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, chatRequest, userMessage, getMessages } from '../support/harness.mjs';
import { rid, modelTexts, offeredTools, toolMessages, waitUntil } from '../support/e2e.mjs';
import { startWithThinkChild } from '../support/think-child.mjs';

const isDoneFor = (id) => (f) => f.type === 'cf_agent_use_chat_response' && f.id === id && f.done;
const toolParts = (messages) => messages.flatMap((m) => m.parts.filter((p) => p.type.startsWith('tool-')));

/** The Coordinator's user text calling `tool` with `args`. A `[` inside is escaped in the JSON, so
 * that a directive meant for the child (`[hang]`) does not steer the Coordinator's own model. */
const directive = (tool, args) => `[tool:${tool}:${JSON.stringify(args).replaceAll('[', '\\u005b')}]`;

/** Runs one Coordinator turn calling `tool` with `args`; returns that call's stored tool part. */
async function coordinatorCall(w, room, tool, args, timeoutMs = 20000) {
  const tab = await connect(w.url, 'Coordinator', room);
  const id = rid();
  tab.send(chatRequest(id, [userMessage(rid('u'), directive(tool, args))]));
  const done = await tab.waitFor(isDoneFor(id), timeoutMs);
  await tab.close();
  assert.equal(done.outcome, 'completed');
  const parts = toolParts(await getMessages(w.url, 'Coordinator', room)).filter((p) => p.type === `tool-${tool}`);
  return parts.at(-1);
}

/** The Think child's stored transcript, read through its own worker. */
async function thinkMessages(w, name) {
  const res = await w.thinkFetch(`/agents/think-child/${name}/get-messages`);
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

/** The child's model requests: those whose first user message is `task`. */
const childRequests = (w, task) => w.model.requests.filter((b) => modelTexts(b)[0] === task);

test('the Think child answers in text and the Rust parent reads it from the streamed chunks', async (t) => {
  const w = await startWithThinkChild(t);
  const part = await coordinatorCall(w, 'coord-text', 'delegate', { agent: 'tc-text', task: 'hello there', class: 'ThinkChild' });
  assert.equal(part.state, 'output-available', part.errorText);
  assert.deepEqual(part.output, { text: 'You said: hello there' });
  const [request] = childRequests(w, 'hello there');
  assert.ok(request, 'the Think child asked the model');
  assert.ok(offeredTools(request).includes('parent_clock'), 'the parent\'s client tools were offered to the child model');
  const stored = await thinkMessages(w, 'tc-text');
  assert.equal(stored.at(-1).role, 'assistant');
  assert.equal(stored.at(-1).parts.filter((p) => p.type === 'text').map((p) => p.text).join(''), 'You said: hello there');
});

test('a client tool the child calls runs in the Rust parent and the child model goes on with its output', async (t) => {
  const w = await startWithThinkChild(t);
  const part = await coordinatorCall(w, 'coord-clock', 'delegate', { agent: 'tc-clock', task: 'read the clock', class: 'ThinkChild' });
  assert.equal(part.state, 'output-available', part.errorText);
  assert.match(part.output.text, /^Tool results: parent_clock=.*"by":"coordinator"/);
  const followUp = childRequests(w, 'read the clock').find((b) => toolMessages(b).length > 0);
  const output = JSON.parse(toolMessages(followUp)[0].content);
  assert.equal(output.by, 'coordinator');
  assert.match(output.now, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
  const [clock] = toolParts(await thinkMessages(w, 'tc-clock'));
  assert.equal(clock.type, 'tool-parent_clock');
  assert.equal(clock.state, 'output-available');
  assert.equal(clock.output.by, 'coordinator');
});

test('an executor error reaches the child model as the tool\'s error and the turn completes', async (t) => {
  const w = await startWithThinkChild(t);
  const part = await coordinatorCall(w, 'coord-fail', 'delegate', { agent: 'tc-fail', task: 'please fail', class: 'ThinkChild' });
  assert.equal(part.state, 'output-available', part.errorText);
  assert.match(part.output.text, /parent_fail=.*the coordinator refused/);
  const [failed] = toolParts(await thinkMessages(w, 'tc-fail'));
  assert.equal(failed.type, 'tool-parent_fail');
  assert.equal(failed.state, 'output-error');
  assert.match(failed.errorText, /the coordinator refused/);
});

test('a deadline cancels the child\'s turn: the parent reports it and the child is free for the next call', async (t) => {
  const w = await startWithThinkChild(t);
  const started = Date.now();
  const part = await coordinatorCall(w, 'coord-hang', 'delegate', {
    agent: 'tc-hang', task: '[hang] wait', class: 'ThinkChild', timeout_ms: 1500,
  });
  assert.equal(part.state, 'output-error');
  assert.match(part.errorText, /did not finish within 1500 ms/);
  assert.ok(Date.now() - started < 9000, 'the call settled once the child cancelled, not after the grace period');
  // Think queues a child's turns: the next one only runs because the hung one was cancelled.
  const next = await coordinatorCall(w, 'coord-hang', 'delegate', { agent: 'tc-hang', task: 'hello again', class: 'ThinkChild' });
  assert.deepEqual(next.output, { text: 'You said: hello again' });
});

test('cancelling the parent\'s turn cancels the child\'s over RPC', async (t) => {
  const w = await startWithThinkChild(t);
  const tab = await connect(w.url, 'Coordinator', 'coord-cancel');
  const id = rid();
  const args = { agent: 'tc-cancel', task: '[hang] until cancelled', class: 'ThinkChild' };
  tab.send(chatRequest(id, [userMessage(rid('u'), directive('delegate', args))]));
  await waitUntil(() => childRequests(w, '[hang] until cancelled').length > 0, { what: 'the child\'s model request' });
  tab.send({ id, type: 'cf_agent_chat_request_cancel' });
  const done = await tab.waitFor(isDoneFor(id), 10000);
  await tab.close();
  assert.notEqual(done.outcome, 'completed');
  const next = await coordinatorCall(w, 'coord-cancel-2', 'delegate', { agent: 'tc-cancel', task: 'are you free', class: 'ThinkChild' });
  assert.deepEqual(next.output, { text: 'You said: are you free' });
});

test('submissions round-trip over RPC: submit with a key, repeat, inspect, cancel a finished and an unknown one', async (t) => {
  const w = await startWithThinkChild(t);
  const submit = (text, key) => coordinatorCall(w, 'coord-sub', 'submit_to', { agent: 'ts-1', text, class: 'ThinkChild', key });
  const inspect = (id, cancel = false) => coordinatorCall(w, 'coord-sub', 'submission', { agent: 'ts-1', class: 'ThinkChild', id, cancel });

  const first = await submit('hello submission', 'k-1');
  assert.equal(first.state, 'output-available', first.errorText);
  assert.ok(['queued', 'running', 'completed'].includes(first.output.status), first.output.status);
  const again = await submit('hello submission', 'k-1');
  assert.equal(again.output.id, first.output.id, 'the same idempotency key names the same submission');

  let seen;
  await waitUntil(async () => {
    seen = await inspect(first.output.id);
    return seen.output?.status === 'completed';
  }, { timeoutMs: 20000, intervalMs: 200, what: 'the submission to complete' });
  assert.ok(seen.output.answerMessageId, 'a completed submission names its answer');
  const stored = await thinkMessages(w, 'ts-1');
  assert.equal(stored.at(-1).id, seen.output.answerMessageId);
  assert.equal(stored.filter((m) => m.role === 'user').length, 1, 'the repeat added no message');

  const completedAgain = await inspect(first.output.id, true);
  assert.equal(completedAgain.output.status, 'completed', 'cancelling a finished submission changes nothing');

  const unknown = await inspect('no-such-submission');
  assert.equal(unknown.state, 'output-error');
  assert.match(unknown.errorText, /has no submission 'no-such-submission'/);
});

// End-to-end: submissions from the agent's own code, on the real runtime. The demo agent's own
// routes (`AgentDefinition::on_request`: POST …/submit, GET …/submissions/<id>, POST
// …/submissions/<id>/cancel) submit a user message durably; the stock `useAgentChat` tab sees the
// turn stream live although it never asked for it; the same idempotency key returns the same
// submission; a runtime restart mid-submission is recovered and the status route reports it
// completed; a cancel aborts it; another agent (the demo's Coordinator, through `AgentStub` over
// the internal `…/__chat-api` route) submits too, and that route is refused from outside; an alarm
// the agent scheduled (`AgentHandle::schedule_alarm`, the demo's POST …/schedule) still fires after
// a restart and its `on_alarm` submits a message.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerFor, waitUntil, tab, rid, chatApi } from '../support/e2e.mjs';
import { chatRequest, userMessage, isDone, getMessages } from '../support/harness.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 20000;

const submit = (w, room, body) => w.fetch(`/agents/chat-agent/${room}/submit`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const status = async (w, room, id) => {
  const res = await w.fetch(`/agents/chat-agent/${room}/submissions/${id}`);
  return res.status === 200 ? res.json() : { httpStatus: res.status };
};
const textOf = (m) => (m?.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('');

test('a submission from a custom route streams live to the stock client tab, survives a restart and is reported completed', { timeout: 90000 }, async (t) => {
  const w = await workerFor(t);
  const room = 'sub-live';
  const live = await mountAgentChat({ url: w.url, name: room, hook: 'agents' });
  t.after(() => live.unmount());

  const res = await submit(w, room, { text: 'a long report [tokens:120] [delay:30]', idempotencyKey: 'report-1' });
  assert.equal(res.status, 202);
  const accepted = await res.json();
  assert.ok(accepted.id, 'accepted with an id');
  assert.ok(['queued', 'running'].includes(accepted.status), accepted.status);
  assert.equal(accepted.messageIds.length, 1, 'the message was given an id');

  // The tab never sent anything, yet shows the submitted message and the answer as it streams.
  const partial = await live.waitFor((chat) => {
    const last = chat.messages.at(-1);
    return last?.role === 'assistant' && textOf(last).includes('w10 ') ? textOf(last) : null;
  }, TURN_MS);
  assert.ok(!partial.includes('w120'), 'seen live, before the answer ended');
  assert.equal(live.chat.messages[0].id, accepted.messageIds[0]);
  assert.match(textOf(live.chat.messages[0]), /a long report/);
  assert.ok(!live.sent.some((f) => f.type === 'cf_agent_use_chat_request'), 'the tab sent no chat request');

  // The same key: the same submission, nothing new stored.
  const again = await (await submit(w, room, { text: 'a long report [tokens:120] [delay:30]', idempotencyKey: 'report-1' })).json();
  assert.equal(again.id, accepted.id);
  assert.equal(again.status, 'running');

  // Kill the runtime mid-answer; the status request wakes the agent, which recovers the turn.
  await live.unmount();
  await w.restart();
  const done = await waitUntil(async () => {
    const s = await status(w, room, accepted.id);
    return s.status === 'completed' ? s : null;
  }, { timeoutMs: TURN_MS, intervalMs: 200, what: 'the submission completed' });
  assert.ok(done.answerMessageId, 'the answer is named');
  const stored = await getMessages(w.url, AGENT, room);
  assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant'], 'one question, one answer');
  assert.equal(stored[1].id, done.answerMessageId);
  assert.ok(textOf(stored[1]).trim().endsWith('w120'), `answer finished after the restart: …${textOf(stored[1]).slice(-40)}`);
  const userRequests = w.model.requests.filter((r) => JSON.stringify(r.messages).includes('a long report'));
  assert.ok(userRequests.length >= 2, 'the model was asked again after the restart');

  // A tab opening now sees the same transcript.
  const later = await mountAgentChat({ url: w.url, name: room, hook: 'agents' });
  t.after(() => later.unmount());
  await later.waitFor((chat) => chat.messages.length === 2 && chat.messages[1].id === done.answerMessageId);
  assert.equal((await status(w, room, 'no-such-id')).httpStatus, 404);
});

test('a queued submission waits for the tab\'s turn, and cancelling a running one aborts it', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t);
  const room = 'sub-cancel';
  const a = await tab(w, room);
  const r1 = rid();
  a.send(chatRequest(r1, [userMessage(rid('u'), 'first [tokens:30] [delay:20]')]));
  await a.waitFor((f) => f.type === 'cf_agent_use_chat_response' && f.id === r1, TURN_MS);
  const queued = await (await submit(w, room, { text: 'second [tokens:200] [delay:30]' })).json();
  assert.equal(queued.status, 'queued', 'behind the running turn');
  assert.equal((await a.waitFor(isDone(r1), TURN_MS)).outcome, 'completed');
  await a.waitFor((f) => f.type === 'cf_agent_use_chat_response' && f.id === queued.id && !f.done, TURN_MS);
  assert.equal((await status(w, room, queued.id)).status, 'running');
  const cancelled = await (await w.fetch(`/agents/chat-agent/${room}/submissions/${queued.id}/cancel`, { method: 'POST' })).json();
  assert.equal(cancelled.status, 'cancelled');
  assert.equal((await a.waitFor(isDone(queued.id), TURN_MS)).outcome, 'aborted', 'the tab sees it stop');
  assert.equal((await status(w, room, queued.id)).status, 'cancelled');
  await a.close();
});

test('another agent submits through its typed stub, and the internal API route is refused from outside', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t);
  const outside = await w.fetch('/agents/chat-agent/sub-other/__chat-api', {
    method: 'POST',
    body: JSON.stringify({ op: 'submit', messages: [userMessage('x1', 'hi')] }),
  });
  assert.equal(outside.status, 403, 'the worker refuses the internal route');

  const coordinator = await tab(w, 'boss', undefined, 'Coordinator');
  const id = rid();
  coordinator.send(chatRequest(id, [userMessage(rid('u'), 'pass it on [tool:submit_to:{"agent":"sub-other","text":"hello from the coordinator"}]')]));
  assert.equal((await coordinator.waitFor(isDone(id), TURN_MS)).outcome, 'completed');
  const boss = await getMessages(w.url, 'Coordinator', 'boss');
  const part = boss.flatMap((m) => m.parts).find((p) => p.type === 'tool-submit_to');
  assert.equal(part?.state, 'output-available', JSON.stringify(part));
  const submissionId = part.output.id;
  assert.ok(submissionId);
  const done = await waitUntil(async () => {
    const s = await status(w, 'sub-other', submissionId);
    return s.status === 'completed' ? s : null;
  }, { timeoutMs: TURN_MS, intervalMs: 100, what: 'the child answered' });
  const child = await getMessages(w.url, AGENT, 'sub-other');
  assert.equal(textOf(child[0]), 'hello from the coordinator');
  assert.equal(child[1].id, done.answerMessageId);
  assert.match(textOf(child[1]), /hello from the coordinator/, 'the scripted model echoed it');
  await coordinator.close();
});

test('an alarm the agent scheduled fires after a restart and its on_alarm submits a message', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t);
  const room = 'sub-alarm';
  const res = await w.fetch(`/agents/chat-agent/${room}/schedule`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inMs: 1500 }),
  });
  assert.equal(res.status, 200);
  const { at } = await res.json();
  assert.ok(at > Date.now(), 'due later');
  await w.restart();
  // Nothing wakes the agent but its alarm.
  const stored = await waitUntil(async () => {
    if (Date.now() < at) return null;
    const ms = await getMessages(w.url, AGENT, room);
    return ms.length === 2 && ms[1].role === 'assistant' && textOf(ms[1]).trim() ? ms : null;
  }, { timeoutMs: TURN_MS, intervalMs: 250, what: 'the check-in and its answer' });
  assert.equal(textOf(stored[0]), 'scheduled check-in');
  assert.match(textOf(stored[1]), /scheduled check-in/, 'the scripted model echoed it');
  assert.equal(w.model.requests.filter((r) => JSON.stringify(r.messages).includes('scheduled check-in')).length, 1, 'run once');
});

test('an idempotency key is bound to its messages (other messages are a conflict) and to its caller', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, { bindings: { INTERNAL_FETCH_FALLBACK: '1' } }); // chatApi: the older fetch path
  const room = 'sub-key';
  const first = await submit(w, room, { text: 'pay invoice 7', idempotencyKey: 'pay-1' });
  assert.equal(first.status, 202);
  const accepted = await first.json();
  const retry = await submit(w, room, { text: 'pay invoice 7', idempotencyKey: 'pay-1' });
  assert.equal((await retry.json()).id, accepted.id, 'a retry is the same submission');
  const other = await submit(w, room, { text: 'pay invoice 8 instead', idempotencyKey: 'pay-1' });
  assert.equal(other.status, 400, 'the same key with other messages is refused');
  assert.match(await other.text(), /idempotency key conflict/);

  // The agent's own code (here over its stub) has keys of its own: the route's key does not reach them.
  const stubbed = await chatApi(w, room, { op: 'submit', messages: [userMessage('', 'pay invoice 7')], idempotencyKey: 'pay-1' });
  assert.equal(stubbed.status, 200, JSON.stringify(stubbed.body));
  assert.notEqual(stubbed.body.id, accepted.id, 'another caller, another submission');
  await waitUntil(async () => (await status(w, room, stubbed.body.id)).status === 'completed', { timeoutMs: TURN_MS, intervalMs: 100, what: 'the stub submission ran' });
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.filter((m) => m.role === 'user' && textOf(m) === 'pay invoice 8 instead').length, 0, 'the conflicting message was not stored');
});

test('a 20 MB POST is refused with 413, declared or streamed without a length, and the agent carries on', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, { bindings: { INTERNAL_FETCH_FALLBACK: '1' } }); // chatApi: the older fetch path
  const room = 'sub-huge';
  const huge = JSON.stringify({ text: 'x'.repeat(20 * 1024 * 1024) });
  const declared = await submit(w, room, JSON.parse(huge));
  assert.equal(declared.status, 413, 'a declared length over the limit');
  assert.match((await declared.json()).error, /body too large/);
  // The same bytes in 1 MiB chunks, with no content-length: reading stops at the limit.
  const bytes = Buffer.from(huge);
  const streamed = await w.fetch(`/agents/chat-agent/${room}/submit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    duplex: 'half',
    body: new ReadableStream({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 1024 * 1024) controller.enqueue(bytes.subarray(at, at + 1024 * 1024));
        controller.close();
      },
    }),
  }).catch((e) => ({ status: `aborted: ${e.cause?.code ?? e.message}` }));
  assert.ok(streamed.status === 413 || String(streamed.status).startsWith('aborted'), `refused: ${streamed.status}`);
  const api = await chatApi(w, room, { op: 'submit', messages: [userMessage('', 'x'.repeat(20 * 1024 * 1024))] });
  assert.equal(api.status, 413, 'the submission API too');
  assert.deepEqual(await getMessages(w.url, AGENT, room), [], 'nothing stored');

  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'still there?')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed', 'the agent is fine');
  await a.close();
});

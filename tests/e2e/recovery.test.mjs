// End-to-end: durable turns across evictions. Each test kills the real runtime
// (Miniflare dispose + a new Miniflare on the same persist dir and port, so sockets drop with
// 1006 and pending alarms fire in the new process) at a chosen moment of a turn, then checks
// what a reconnecting tab receives and the final transcript: mid-text (continued into the same
// assistant message), before the first token (retried as a fresh turn), mid-server-tool, while a
// client tool or an approval waits for a person (parked, then driven by the later answer), with
// no client at all (the heartbeat alarm wakes the agent), and after the recovery budget ran out
// (the terminal error is replayed through the resume handshake until a new turn is accepted).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, chatRequest, userMessage, getMessages, isDone, isResponse, textOf } from '../support/harness.mjs';
import { workerFor, rid, chunkFrames, probeAnswer as probeShared, followContinuation, toolPart, waitUntil, modelTexts, toolMessages, tab } from '../support/e2e.mjs';
import { startModelServer } from '../support/model-server.mjs';
import { startStallProxy } from '../support/stall-proxy.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 15000;
const CONTINUE_INSTRUCTION = 'Continue your previous response from exactly where it stopped';
const INTERRUPTED_TOOL_ERROR = 'The tool call was interrupted before a result was recorded.';
const EXHAUSTED_TEXT = 'The assistant was interrupted and could not recover. Please try again.';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const TIMEZONE_TOOL = {
  name: 'getUserTimezone',
  description: "The user's IANA timezone, read from the browser.",
  parameters: { type: 'object', properties: {} },
};

/** A worker whose model requests go through a stall proxy (own model server and storage). */
async function stallWorker(t) {
  const model = await startModelServer();
  const proxy = await startStallProxy(model);
  const w = await workerFor(t, { model: proxy });
  t.after(async () => { await proxy.close(); await model.close(); });
  return { w, model, proxy };
}

/** Parsed chunks of request `id` received by `c`. */
const chunksOf = (c, id) => chunkFrames(c.frames, id).map((f) => JSON.parse(f.body));
const deltaCount = (c, id) => chunksOf(c, id).filter((x) => x.type === 'text-delta').length;
const recoveringFrames = (c) => c.frames.filter((f) => f.type === 'cf_agent_chat_recovering');

const probeAnswer = (c) => probeShared(c, TURN_MS);

/** Kill the runtime and bring it back on the same storage; the old tab's socket drops. */
async function kill(w, ...tabs) {
  await w.restart();
  for (const c of tabs) {
    const info = await c.waitForClose(5000);
    assert.equal(info.code, 1006, 'the socket dropped with the process');
  }
}

/** The scripted model's `[tokens:n]` answer. */
const words = (n) => Array.from({ length: n }, (_, i) => `w${i + 1}`).join(' ');

/** Text parts of a UIMessage. */
const textParts = (m) => m.parts.filter((p) => p.type === 'text');

/** The transcript once `pred(messages)` holds (polled over HTTP). */
function transcriptWhen(w, room, pred, what) {
  return waitUntil(async () => {
    const ms = await getMessages(w.url, AGENT, room);
    return pred(ms) ? ms : null;
  }, { timeoutMs: TURN_MS, intervalMs: 100, what });
}

/** One user message per id and one assistant per turn: the exactly-once invariant. */
function assertOneAssistantPerUser(messages) {
  const ids = messages.map((m) => m.id);
  assert.equal(new Set(ids).size, ids.length, `duplicate message ids: ${ids}`);
  for (let i = 0; i < messages.length; i++) {
    if (messages[i].role === 'assistant') {
      assert.notEqual(messages[i + 1]?.role, 'assistant', `two assistants in a row: ${ids}`);
    }
  }
}

test('a turn cut mid-text is continued into the same assistant message after a restart, and the reconnecting tab is offered the recovery stream', async (t) => {
  const w = await workerFor(t);
  const room = 'rec-mid-text';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'tell me a story [tokens:120] [delay:25]')]));
  await waitUntil(() => deltaCount(a, id) >= 40, { timeoutMs: TURN_MS, what: '40 text deltas' });
  const start = chunksOf(a, id).find((x) => x.type === 'start');
  assert.ok(start?.messageId, 'the start chunk names the assistant message');
  const seen = textOf(a.frames, id);
  const requestsBefore = w.model.requests.length;
  await kill(w, a);
  assert.ok(!a.frames.some(isDone(id)), 'the turn was cut before it ended');

  // The reconnecting tab wakes the agent; it is offered the stream of the recovery.
  const b = await connect(w.url, AGENT, room);
  const offer = await b.waitFor('cf_agent_stream_resuming', TURN_MS);
  b.send({ type: 'cf_agent_stream_resume_ack', id: offer.id });
  const done = await b.waitFor(isDone(offer.id), TURN_MS);
  assert.ok(!done.error, `no error: ${JSON.stringify(done)}`);
  assert.deepEqual(done.messageIds, [uid], 'the terminal frame names the interrupted turn');
  const off = await b.waitFor((f) => f.type === 'cf_agent_chat_recovering' && f.recovering === false, TURN_MS);
  assert.equal(off.id, id, 'the recovery is named after the interrupted request');
  const flags = recoveringFrames(b);
  t.diagnostic(`offered ${offer.id === id ? 'the cut stream' : 'the recovery continuation'}; recovering frames: ${flags.map((f) => f.recovering).join(',')}`);
  if (flags.length > 1) assert.deepEqual(flags.map((f) => f.recovering), [true, false]);
  if (offer.id !== id) {
    // The offer was the recovery continuation itself: its frames are continuation frames and
    // its start chunk does not name a new message.
    const frames = b.frames.filter(isResponse(offer.id));
    assert.ok(frames.every((f) => f.continuation === true), 'continuation frames');
    const replayedStart = chunksOf(b, offer.id).find((x) => x.type === 'start');
    if (replayedStart) assert.equal(replayedStart.messageId, undefined);
  }

  const messages = await getMessages(w.url, AGENT, room);
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
  assert.equal(messages[0].id, uid);
  const [, assistant] = messages;
  assert.equal(assistant.id, start.messageId, 'the answer kept the id of the interrupted one');
  const texts = textParts(assistant);
  assert.equal(texts.length, 2, `partial + continuation: ${JSON.stringify(assistant.parts)}`);
  const [partial, continuation] = texts;
  assert.ok(partial.text.length > 0 && seen.startsWith(partial.text), 'the partial is what the tab saw (up to the last durable chunk)');
  assert.equal(partial.state, 'done', 'the dangling streaming text was closed');
  assert.ok(continuation.text.length > 0);
  assert.equal(partial.text + continuation.text, words(120), 'partial + continuation read as one answer (scripted model)');
  assert.ok(assistant.parts.indexOf(continuation) > assistant.parts.indexOf(partial));
  assert.equal(assistant.parts[assistant.parts.indexOf(continuation) - 1].type, 'step-start');

  // The model was asked to go on from the partial answer.
  assert.equal(w.model.requests.length, requestsBefore + 1, 'exactly one recovery request');
  const last = w.model.requests.at(-1).messages;
  const [assistantMsg, instruction] = last.slice(-2);
  assert.equal(assistantMsg.role, 'assistant');
  assert.equal(assistantMsg.content, partial.text);
  assert.equal(instruction.role, 'user');
  assert.ok(String(instruction.content).includes(CONTINUE_INSTRUCTION), `instruction: ${instruction.content}`);
  assert.deepEqual(modelTexts(w.model.requests.at(-1)).filter((x) => x.includes(CONTINUE_INSTRUCTION)).length, 1);
  assert.ok(!JSON.stringify(messages).includes(CONTINUE_INSTRUCTION), 'the synthetic instruction is never persisted');
  assert.ok(!b.frames.some((f) => JSON.stringify(f).includes(CONTINUE_INSTRUCTION)), 'nor broadcast');
  assert.equal(messages.filter((m) => m.role === 'user').length, 1);

  // Settled: nothing left to resume.
  const answer = await probeAnswer(b);
  assert.equal(answer.type, 'cf_agent_stream_resume_none');
});

test('a turn cut before its first token is retried as a fresh turn with a new assistant message', async (t) => {
  const { w, model, proxy } = await stallWorker(t);
  const room = 'rec-first-token';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'hello there [stall-once:3000]')]));
  await waitUntil(() => proxy.held === 1, { timeoutMs: TURN_MS, what: 'the model request held' });
  await sleep(700); // the start chunks reach the durable log; nothing visible was produced
  const start = chunksOf(a, id).find((x) => x.type === 'start');
  assert.equal(deltaCount(a, id), 0);
  await kill(w, a);
  assert.equal(model.requests.length, 0, 'the model never answered the cut request');

  const b = await connect(w.url, AGENT, room);
  const offer = await b.waitFor('cf_agent_stream_resuming', TURN_MS);
  b.send({ type: 'cf_agent_stream_resume_ack', id: offer.id });
  const retry = offer.id;
  const done = await b.waitFor(isDone(retry), TURN_MS);
  assert.ok(!done.error, JSON.stringify(done));
  assert.deepEqual(done.messageIds, [uid], 'the retry reports the interrupted turn');
  // Offered the cut stream, the tab gets the retry's own frames after (or, when the retry was
  // quicker than the ACK, before) that stream's end.
  b.cursor = 0;
  await b.waitFor((f) => f.type === 'cf_agent_chat_recovering' && f.recovering === false, TURN_MS);
  const retried = b.frames.find((f) => isResponse()(f) && f.done && f.id !== id);
  assert.ok(retried, 'the retry ends in the tab');
  assert.ok(!retried.error, JSON.stringify(retried));
  assert.deepEqual(retried.messageIds, [uid], 'the retry reports the interrupted turn');
  assert.ok(b.frames.filter(isResponse(retried.id)).every((f) => !f.continuation), 'a retry is not a continuation');
  if (retry !== id) {
    assert.ok(b.frames.filter(isResponse(retry)).every((f) => !f.continuation), 'a retry is not a continuation');
  }

  const messages = await getMessages(w.url, AGENT, room);
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
  assert.equal(messages[0].id, uid);
  if (start?.messageId) assert.notEqual(messages[1].id, start.messageId, 'a fresh assistant message');
  assert.equal(textParts(messages[1]).map((p) => p.text).join(''), 'You said: hello there [stall-once:3000]');
  assert.equal(model.requests.length, 1, 'one model request answered: the retry');
  assert.equal(model.requests[0].messages.at(-1).role, 'user', 'a retry is the original request, not a continuation');
  assert.equal(modelTexts(model.requests[0]).at(-1), 'hello there [stall-once:3000]');
});

test('a turn cut right after a server tool call ends with the tool result or an interrupted-tool error, and the model goes on in the same message', async (t) => {
  const w = await workerFor(t);
  const room = 'rec-server-tool';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'what is the weather in Paris [delay:150]')]));
  await a.waitFor((f) => isResponse(id)(f) && f.body?.includes('"tool-input-available"'), TURN_MS);
  const call = chunksOf(a, id).find((x) => x.type === 'tool-input-available');
  assert.equal(call.toolName, 'get_weather');
  const start = chunksOf(a, id).find((x) => x.type === 'start');
  await kill(w, a);
  assert.ok(!a.frames.some(isDone(id)), 'the turn was cut before it ended');

  const b = await connect(w.url, AGENT, room);
  const offer = await b.waitFor('cf_agent_stream_resuming', TURN_MS);
  b.send({ type: 'cf_agent_stream_resume_ack', id: offer.id });
  const done = await b.waitFor(isDone(offer.id), TURN_MS);
  assert.ok(!done.error, JSON.stringify(done));
  await b.waitFor((f) => f.type === 'cf_agent_chat_recovering' && f.recovering === false, TURN_MS);

  const messages = await transcriptWhen(w, room, (ms) => ms.at(-1)?.role === 'assistant', 'the answer');
  assertOneAssistantPerUser(messages);
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
  const [, assistant] = messages;
  assert.equal(assistant.id, start.messageId);
  const part = toolPart(messages, call.toolCallId);
  assert.ok(part, 'the tool call is kept');
  t.diagnostic(`tool part after the restart: ${part.state}`);
  if (part.state === 'output-available') {
    assert.deepEqual(part.output, { city: 'Paris', tempC: 21 });
  } else {
    assert.equal(part.state, 'output-error', JSON.stringify(part));
    assert.equal(part.errorText, INTERRUPTED_TOOL_ERROR);
  }
  assert.equal(assistant.parts.filter((p) => p.toolCallId === call.toolCallId).length, 1, 'the call is not duplicated');
  const toolIndex = assistant.parts.indexOf(assistant.parts.find((p) => p.toolCallId === call.toolCallId));
  const after = assistant.parts.slice(toolIndex + 1).filter((p) => p.type === 'text' && p.text.length > 0);
  assert.ok(after.length >= 1, `the model went on after the tool: ${JSON.stringify(assistant.parts)}`);
  // The model saw the call's outcome.
  const lastBody = w.model.requests.at(-1);
  const toolMsg = toolMessages(lastBody).find((m) => m.tool_call_id === call.toolCallId);
  assert.ok(toolMsg, 'the tool outcome reached the model');
  if (part.state === 'output-error') assert.ok(String(toolMsg.content).includes('interrupted'));
});

test('a turn waiting for a client tool is parked across a restart: no recovery, no resume offer, and the later result drives the continuation', async (t) => {
  const w = await workerFor(t);
  const room = 'rec-client-tool';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, "what's my timezone? [delay:30]")], { clientTools: [TIMEZONE_TOOL] }));
  const done = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'completed');
  const call = chunksOf(a, id).find((x) => x.type === 'tool-input-available');
  assert.equal(call.toolName, 'getUserTimezone');
  await kill(w, a);

  const b = await connect(w.url, AGENT, room);
  const snapshot = await b.waitFor('cf_agent_chat_messages');
  assert.equal(toolPart(snapshot.messages, call.toolCallId).state, 'input-available', 'the call is in the connect snapshot');
  await b.waitFor('cf_agent_mcp_servers');
  const answer = await probeAnswer(b);
  assert.equal(answer.type, 'cf_agent_stream_resume_none');
  assert.equal(answer.reason, 'idle');
  await sleep(1000);
  assert.equal(recoveringFrames(b).length, 0, 'no recovery for a turn parked on a person');
  assert.ok(!b.frames.some((f) => f.type === 'cf_agent_stream_resuming'), 'no resume offer');
  assert.equal(w.model.requests.length, 1, 'nothing ran');
  const parked = await getMessages(w.url, AGENT, room);
  assert.equal(toolPart(parked, call.toolCallId).state, 'input-available', 'not repaired, not failed');

  // The result arrives after the restart, without clientTools: the persisted list is used.
  b.send({ type: 'cf_agent_tool_result', toolCallId: call.toolCallId, toolName: 'getUserTimezone', output: { timezone: 'Pacific/Auckland' }, autoContinue: true });
  const follow = await followContinuation(b, { probeMs: TURN_MS, turnMs: TURN_MS });
  const { end } = follow;
  assert.equal(end.outcome, 'completed');
  assert.equal(end.continuation, true);
  assert.ok(textOf(b.frames, follow.id).includes('Pacific/Auckland'), 'the continuation used the result');

  assert.equal(w.model.requests.length, 2);
  const tm = toolMessages(w.model.requests[1]).find((m) => m.tool_call_id === call.toolCallId);
  assert.ok(String(tm?.content).includes('Pacific/Auckland'), 'the model saw the result');
  assert.ok(w.model.requests[1].tools.some((x) => (x.function?.name ?? x.name) === 'getUserTimezone'), 'the persisted client tools are still offered');
  // As without a restart, the continuation is its own assistant message after the call's one.
  const messages = await getMessages(w.url, AGENT, room);
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant', 'assistant']);
  assert.equal(toolPart([messages[1]], call.toolCallId).state, 'output-available');
  assert.ok(textParts(messages[2]).some((p) => p.text.includes('Pacific/Auckland')));
  assert.equal(recoveringFrames(b).length, 0);
});

test('a turn waiting for an approval is parked across a restart, and approving afterwards runs the tool in the continuation', async (t) => {
  const w = await workerFor(t);
  const room = 'rec-approval';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'please delete notes.txt [delay:30]')]));
  const done = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'completed');
  const call = chunksOf(a, id).find((x) => x.type === 'tool-input-available');
  assert.equal(call.toolName, 'delete_file');
  assert.ok(chunksOf(a, id).some((x) => x.type === 'tool-approval-request'));
  await kill(w, a);

  const b = await tab(w, room);
  const answer = await probeAnswer(b);
  assert.equal(answer.type, 'cf_agent_stream_resume_none');
  assert.equal(answer.reason, 'idle');
  await sleep(1000);
  assert.equal(recoveringFrames(b).length, 0, 'no recovery for a turn parked on a person');
  const parked = toolPart(await getMessages(w.url, AGENT, room), call.toolCallId);
  assert.equal(parked.state, 'approval-requested', 'still waiting for the person');
  assert.equal(w.model.requests.length, 1);

  b.send({ type: 'cf_agent_tool_approval', toolCallId: call.toolCallId, approved: true, autoContinue: true });
  const follow = await followContinuation(b, { probeMs: TURN_MS, turnMs: TURN_MS });
  const { end } = follow;
  assert.equal(end.outcome, 'completed');
  const outputs = chunksOf(b, follow.id).filter((x) => x.type === 'tool-output-available');
  assert.equal(outputs.length, 1, 'the approved tool ran once');
  assert.equal(outputs[0].toolCallId, call.toolCallId);
  assert.deepEqual(outputs[0].output, { deleted: 'notes.txt' });

  const messages = await getMessages(w.url, AGENT, room);
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant', 'assistant']);
  const part = toolPart([messages[1]], call.toolCallId);
  assert.equal(part.state, 'output-available');
  assert.deepEqual(part.output, { deleted: 'notes.txt' });
  assert.ok(textParts(messages[2]).some((p) => p.text.includes('deleted')), 'the model went on after the tool');
  assert.equal(w.model.requests.length, 2);
  assert.deepEqual(JSON.parse(toolMessages(w.model.requests[1])[0].content), { deleted: 'notes.txt' });
});

test('with no client connected, the heartbeat alarm wakes the agent after a restart and finishes the cut turn', async (t) => {
  // The alarm is kept 2 s ahead instead of the default 10 s (the test build's switch).
  const w = await workerFor(t, { bindings: { DEBUG_HEARTBEAT_MS: '2000' } });
  const room = 'rec-no-client';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'a long story [tokens:120] [delay:25]')]));
  await waitUntil(() => deltaCount(a, id) >= 20, { timeoutMs: TURN_MS, what: '20 text deltas' });
  const startedAt = Date.now();
  const start = chunksOf(a, id).find((x) => x.type === 'start');
  a.ws.terminate(); // the tab vanishes
  await w.restart();
  assert.equal(w.model.requests.length, 1);

  // No request of ours may reach the agent now (any would wake it): watch the model instead.
  await waitUntil(() => w.model.requests.length >= 2, { timeoutMs: 16000, intervalMs: 100, what: 'the alarm-driven recovery request to the model' });
  const wokeAfter = Date.now() - startedAt;
  const body = w.model.requests[1];
  assert.equal(body.messages.at(-2).role, 'assistant', 'a continuation of the partial');
  assert.ok(String(body.messages.at(-1).content).includes(CONTINUE_INSTRUCTION));
  // The agent is awake now; reading the transcript no longer changes what is observed.
  const messages = await transcriptWhen(w, room, (ms) => ms[1] && textParts(ms[1]).length === 2
    && textParts(ms[1]).every((p) => p.state === 'done'), `the continuation persisted (woke after ${wokeAfter} ms)`);
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
  assert.equal(messages[1].id, start.messageId);
  const texts = textParts(messages[1]);
  assert.ok(texts[1].text.length > 0, 'the continuation finished while no tab was connected');
  assert.equal(texts.map((p) => p.text).join(''), words(120), 'partial + continuation read as one answer');
  assert.equal(w.model.requests.length, 2, 'recovered exactly once');
  const c = await tab(w, room);
  const answer = await probeAnswer(c);
  assert.equal(answer.type, 'cf_agent_stream_resume_none');
  assert.equal(recoveringFrames(c).length, 0, 'the recovery is over');
});

test('a message queued behind a turn that is cut is answered after the restart, and the cut answer keeps its place before it', async (t) => {
  const w = await workerFor(t);
  const room = 'rec-queued';
  const a = await tab(w, room);
  const id1 = rid();
  const u1 = userMessage(rid('u1'), 'first question [tokens:80] [delay:25]');
  a.send(chatRequest(id1, [u1]));
  await waitUntil(() => deltaCount(a, id1) >= 15, { timeoutMs: TURN_MS, what: 'first deltas' });
  const start = chunksOf(a, id1).find((x) => x.type === 'start');
  const id2 = rid();
  const u2 = userMessage(rid('u2'), 'second question');
  a.send(chatRequest(id2, [u1, u2]));
  // u2 is stored (the transcript broadcast to other tabs would show it) and waits in the queue.
  await transcriptWhen(w, room, (ms) => ms.some((m) => m.id === u2.id), 'the queued message stored');
  await kill(w, a);

  const b = await connect(w.url, AGENT, room);
  const offer = await b.waitFor('cf_agent_stream_resuming', TURN_MS);
  b.send({ type: 'cf_agent_stream_resume_ack', id: offer.id });
  const messages = await transcriptWhen(w, room, (ms) => ms.length === 4 && ms[3].role === 'assistant'
    && textParts(ms[3]).every((p) => p.state === 'done'), 'the queued message answered');
  assertOneAssistantPerUser(messages);
  assert.deepEqual(messages.map((m) => m.id).slice(0, 3), [u1.id, start.messageId, u2.id], 'the cut answer stays after its question');
  assert.ok(textParts(messages[1])[0].text.startsWith('w1 '), 'the partial answer is kept');
  assert.equal(textParts(messages[3]).map((p) => p.text).join(''), 'You said: second question');
  assert.equal(modelTexts(w.model.requests.at(-1)).at(-1), 'second question');
  await sleep(300);
  assert.equal((await getMessages(w.url, AGENT, room)).length, 4, 'nothing else runs');
});

test('when recovery runs out of interrupted attempts, a reconnecting tab gets the terminal error through the resume handshake until a new turn is accepted', async (t) => {
  const { w, proxy } = await stallWorker(t);
  const room = 'rec-exhausted';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  // Every model request of this turn (the first and each recovery) is held 3 s before it streams.
  a.send(chatRequest(id, [userMessage(uid, 'an essay [tokens:100] [delay:20] [stall:3000]')]));
  await waitUntil(() => deltaCount(a, id) >= 5, { timeoutMs: TURN_MS, what: 'first deltas' });
  await kill(w, a);

  // Wake the agent (an HTTP read does), let the recovery reach the model, kill it again.
  let received = proxy.received.length;
  for (let i = 0; i < 5; i++) {
    await getMessages(w.url, AGENT, room);
    await waitUntil(() => proxy.received.length > received, { timeoutMs: TURN_MS, what: `recovery attempt ${i + 1}` });
    received = proxy.received.length;
    await w.restart();
  }
  // The next wake finds the budget spent.
  const partial = await getMessages(w.url, AGENT, room);
  await sleep(500);
  assert.equal(proxy.received.length, received, 'no further attempt once the budget is spent');
  assert.deepEqual(partial.map((m) => m.role), ['user', 'assistant'], 'the partial answer is kept');

  for (let round = 0; round < 2; round++) {
    const b = await tab(w, room);
    const answer = await probeAnswer(b);
    assert.equal(answer.type, 'cf_agent_stream_resuming', `reconnect ${round + 1}: ${JSON.stringify(answer)}`);
    b.send({ type: 'cf_agent_stream_resume_ack', id: answer.id });
    const end = await b.waitFor(isDone(answer.id), TURN_MS);
    assert.equal(end.error, true);
    assert.equal(end.body, EXHAUSTED_TEXT);
    assert.deepEqual(end.messageIds, [uid]);
    await b.close();
  }

  // A new turn is accepted: the error is no longer replayed.
  const c = await tab(w, room);
  const history = await getMessages(w.url, AGENT, room);
  const id2 = rid();
  c.send(chatRequest(id2, [...history, userMessage(rid('u'), 'hello again')]));
  const end2 = await c.waitFor(isDone(id2), TURN_MS);
  assert.equal(end2.outcome, 'completed');
  const answer = await probeAnswer(c);
  assert.equal(answer.type, 'cf_agent_stream_resume_none');
  assert.equal(answer.reason, 'idle');
  const d = await tab(w, room);
  const answerD = await probeAnswer(d);
  assert.equal(answerD.type, 'cf_agent_stream_resume_none');
  const messages = await getMessages(w.url, AGENT, room);
  assertOneAssistantPerUser(messages);
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
});

// End-to-end: client tools, approvals, automatic continuation and the live resume handshake
// on the real built worker, with frames shaped exactly as useAgentChat sends them:
// tool results and approvals, the resume probe the hook sends after an auto-continuing result,
// and the ACK it sends when offered a stream.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  connect, chatRequest, userMessage, getMessages, isDone, isResponse, textOf,
} from '../support/harness.mjs';
import {
  workerFor, rid, responsesOf, chunkFrames, typesOf, waitForModelRequests, modelTexts,
  toolMessages, offeredTools, probe, probeAnswer, followContinuation as followShared, toolPart, waitUntil, tab,
} from '../support/e2e.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 15000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const TIMEZONE_TOOL = {
  name: 'getUserTimezone',
  description: "The user's IANA timezone, read from the browser.",
  parameters: { type: 'object', properties: {} },
};
const SCREEN_TOOL = {
  name: 'getScreenSize',
  description: "The size of the user's screen.",
  parameters: { type: 'object', properties: {} },
};

/** Run a user turn from `c` and return {id, uid, done, frames, chunks (parsed)}. */
async function turn(c, text, extraBody = {}, history = []) {
  const id = rid();
  const uid = rid('u');
  const mark = c.mark();
  c.send(chatRequest(id, [...history, userMessage(uid, text)], extraBody));
  const done = await c.waitFor(isDone(id), TURN_MS);
  const frames = c.since(mark);
  return { id, uid, done, frames, chunks: chunkFrames(frames, id).map((f) => JSON.parse(f.body)) };
}

/** The tool calls (tool-input-available chunks) of a turn. */
const callsOf = (r) => r.chunks.filter((c) => c.type === 'tool-input-available');

/** `cf_agent_tool_result` exactly as the hook's addToolOutput sends it. */
function toolResult(toolCallId, toolName, output, { autoContinue = true, state, errorText, clientTools } = {}) {
  const frame = { type: 'cf_agent_tool_result', toolCallId, toolName, output, autoContinue };
  if (state) frame.state = state;
  if (errorText !== undefined) frame.errorText = errorText;
  if (clientTools) frame.clientTools = clientTools;
  return frame;
}

/** Assert the agent is idle: a probe is answered resume_none/idle (no continuation owed or running). */
async function assertIdle(c) {
  const answer = await probeAnswer(c);
  assert.equal(answer.type, 'cf_agent_stream_resume_none');
  assert.equal(answer.reason, 'idle');
}

/** The shared follow, plus: the proactive offer of a pending continuation carries no probeId. */
async function followContinuation(c) {
  const followed = await followShared(c, { turnMs: TURN_MS });
  if (followed.resuming) assert.equal(followed.resuming.probeId, undefined, 'the proactive offer carries no probeId');
  return followed;
}

test('a client tool call streams to every tab, ends the turn normally, and is persisted input-available', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-call';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const markB = b.mark();
  const r = await turn(a, "what's my timezone?", { clientTools: [TIMEZONE_TOOL] });
  assert.equal(r.done.outcome, 'completed');
  assert.deepEqual(r.done.messageIds, [r.uid]);
  const types = typesOf(r.frames, r.id);
  assert.deepEqual(types.filter((x) => x !== 'tool-input-delta'), [
    'start', 'start-step', 'tool-input-start', 'tool-input-available', 'finish-step', 'finish',
  ]);
  const [call] = callsOf(r);
  assert.equal(call.toolName, 'getUserTimezone');
  assert.deepEqual(call.input, {});
  assert.equal(r.chunks.at(-1).finishReason, 'tool-calls');
  await b.waitFor(isDone(r.id), TURN_MS);
  assert.deepEqual(chunkFrames(b.since(markB), r.id), chunkFrames(r.frames, r.id));

  const persisted = await getMessages(w.url, AGENT, room);
  assert.deepEqual(persisted.map((m) => m.role), ['user', 'assistant']);
  const part = toolPart(persisted, call.toolCallId);
  assert.equal(part.type, 'tool-getUserTimezone');
  assert.equal(part.state, 'input-available');
  assert.deepEqual(part.input, {});
  assert.equal(part.output, undefined);

  // The schema reached the model as a tool, and the agent did not carry on by itself.
  const [body] = w.model.requests;
  const offered = body.tools.find((x) => (x.function?.name ?? x.name) === 'getUserTimezone');
  assert.equal(offered.function.description, TIMEZONE_TOOL.description);
  assert.deepEqual(offered.function.parameters, TIMEZONE_TOOL.parameters);
  await assertIdle(a);
  assert.equal(w.model.requests.length, 1);
});

test('a client tool replaces a same-named server tool: the call waits for the browser instead of running on the server', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-override';
  const a = await tab(w, room);
  const clientWeather = {
    name: 'get_weather',
    description: 'Weather from the browser.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  };
  const r = await turn(a, 'weather in Oslo', { clientTools: [clientWeather] });
  assert.equal(r.done.outcome, 'completed');
  const [call] = callsOf(r);
  assert.equal(call.toolName, 'get_weather');
  assert.deepEqual(call.input, { city: 'Oslo' });
  assert.ok(!r.chunks.some((c) => c.type === 'tool-output-available' || c.type === 'tool-output-error'), 'not run on the server');
  const part = toolPart(await getMessages(w.url, AGENT, room), call.toolCallId);
  assert.equal(part.state, 'input-available');
  assert.equal(w.model.requests.length, 1, 'no second step');
  const offered = w.model.requests[0].tools.filter((x) => (x.function?.name ?? x.name) === 'get_weather');
  assert.equal(offered.length, 1, 'one get_weather offered');
  assert.equal(offered[0].function.description, 'Weather from the browser.');
  assert.ok(offeredTools(w.model.requests[0]).includes('delete_file'), 'other server tools still offered');
});

test('a tool result updates the part and is broadcast as cf_agent_message_updated to every tab, sender included', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-result';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const r = await turn(a, "what's my timezone?", { clientTools: [TIMEZONE_TOOL] });
  const [call] = callsOf(r);
  const [, assistant] = await getMessages(w.url, AGENT, room);

  a.send(toolResult(call.toolCallId, 'getUserTimezone', { timezone: 'Europe/Paris' }, { autoContinue: false }));
  const updatedA = await a.waitFor('cf_agent_message_updated');
  const updatedB = await b.waitFor('cf_agent_message_updated');
  assert.deepEqual(updatedA, updatedB);
  assert.equal(updatedA.message.id, assistant.id);
  const part = toolPart([updatedA.message], call.toolCallId);
  assert.equal(part.state, 'output-available');
  assert.deepEqual(part.output, { timezone: 'Europe/Paris' });
  assert.equal(part.preliminary, false);
  assert.deepEqual(part.input, {});

  const persisted = toolPart(await getMessages(w.url, AGENT, room), call.toolCallId);
  assert.deepEqual(persisted, part, 'persisted as broadcast');
  // autoContinue:false: nothing else happens.
  await assertIdle(a);
  assert.equal(w.model.requests.length, 1);
});

test('an error result sets output-error with its text (or the default text) and is broadcast', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-error';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const r1 = await turn(a, "what's my timezone?", { clientTools: [TIMEZONE_TOOL] });
  const [call1] = callsOf(r1);
  a.send(toolResult(call1.toolCallId, 'getUserTimezone', null, { state: 'output-error', errorText: 'User declined', autoContinue: false }));
  const updated = await b.waitFor('cf_agent_message_updated');
  await a.waitFor('cf_agent_message_updated');
  const part = toolPart([updated.message], call1.toolCallId);
  assert.equal(part.state, 'output-error');
  assert.equal(part.errorText, 'User declined');
  assert.equal(toolPart(await getMessages(w.url, AGENT, room), call1.toolCallId).state, 'output-error');

  // Without errorText the agent uses the reference default.
  const history = await getMessages(w.url, AGENT, room);
  const r2 = await turn(a, "what's my timezone, again?", {}, history);
  const [call2] = callsOf(r2);
  a.send({ type: 'cf_agent_tool_result', toolCallId: call2.toolCallId, toolName: 'getUserTimezone', state: 'output-error', autoContinue: false });
  const updated2 = await b.waitFor((f) => f.type === 'cf_agent_message_updated' && toolPart([f.message], call2.toolCallId));
  assert.equal(toolPart([updated2.message], call2.toolCallId).errorText, 'Tool execution denied by user');
  await assertIdle(a);
});

test('a result for an unknown tool call id changes nothing, broadcasts nothing and continues nothing', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-unknown';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const first = await turn(a, "what's my timezone?", { clientTools: [TIMEZONE_TOOL] });
  await b.waitFor(isDone(first.id), TURN_MS); // the other tab's copy of the terminal frame may arrive later
  const before = await getMessages(w.url, AGENT, room);
  const markA = a.mark();
  const markB = b.mark();
  a.send(toolResult('call_does_not_exist', 'getUserTimezone', { timezone: 'UTC' }, { autoContinue: true }));
  a.send(toolResult('call_does_not_exist_2', 'getUserTimezone', { timezone: 'UTC' }, { autoContinue: false }));
  await sleep(300); // longer than the continuation coalescing window
  await assertIdle(a);
  assert.deepEqual(a.since(markA).filter((f) => f.type !== 'cf_agent_stream_resume_none'), []);
  assert.deepEqual(b.since(markB), []);
  assert.deepEqual(await getMessages(w.url, AGENT, room), before);
  assert.equal(w.model.requests.length, 1);
});

test('a result with autoContinue starts exactly one continuation: continuation frames, no start messageId, and the model sees the result', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-continue';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const r = await turn(a, "what's my timezone? [delay:40]", { clientTools: [TIMEZONE_TOOL] });
  const [call] = callsOf(r);
  const [, firstAssistant] = await getMessages(w.url, AGENT, room);
  const markB = b.mark();

  a.send(toolResult(call.toolCallId, 'getUserTimezone', { timezone: 'Europe/Paris' }, { autoContinue: true }));
  const { id, frames } = await followContinuation(a);
  assert.notEqual(id, r.id, 'a server-minted request id');
  const doneB = await b.waitFor(isDone(id), TURN_MS);
  assert.deepEqual(doneB, { type: 'cf_agent_use_chat_response', id, body: '', done: true, continuation: true, outcome: 'completed' });

  // The other tab saw the continuation live.
  const framesB = b.since(markB);
  const updatedAt = framesB.findIndex((f) => f.type === 'cf_agent_message_updated');
  assert.ok(updatedAt >= 0, 'message_updated reached the other tab');
  const liveB = responsesOf(framesB, id);
  assert.ok(liveB.every((f) => f.continuation === true), 'every frame carries continuation:true');
  assert.ok(framesB.indexOf(liveB[0]) > updatedAt, 'the result update precedes the continuation');
  const chunksB = chunkFrames(framesB, id);
  assert.deepEqual(chunksB.map((f) => f.seq), chunksB.map((_, i) => i));
  const start = JSON.parse(chunksB[0].body);
  assert.equal(start.type, 'start');
  assert.equal(start.messageId, undefined, 'a continuation start has no messageId');
  assert.equal(textOf(framesB, id), 'Tool results: getUserTimezone={"timezone":"Europe/Paris"}');

  // The owner got it through resume: replay (with seq) + replayComplete, then live frames.
  const replayed = responsesOf(frames, id).filter((f) => f.replay);
  assert.ok(replayed.length >= 1);
  assert.ok(replayed.every((f) => f.continuation === true));
  assert.equal(textOf(frames, id), textOf(framesB, id), 'the owner sees the same text');

  // The model saw the tool call and its result.
  const requests = await waitForModelRequests(w.model, 2);
  const second = requests[1];
  const assistantCall = second.messages.find((m) => m.role === 'assistant' && m.tool_calls?.length);
  assert.equal(assistantCall.tool_calls[0].id, call.toolCallId);
  const [result] = toolMessages(second);
  assert.equal(result.tool_call_id, call.toolCallId);
  assert.deepEqual(JSON.parse(result.content), { timezone: 'Europe/Paris' });
  assert.deepEqual(modelTexts(second), ["what's my timezone? [delay:40]"]);

  // Exactly one continuation; it is persisted as its own assistant message.
  await sleep(200);
  await assertIdle(a);
  assert.equal(w.model.requests.length, 2);
  const persisted = await getMessages(w.url, AGENT, room);
  assert.deepEqual(persisted.map((m) => m.role), ['user', 'assistant', 'assistant']);
  assert.equal(persisted[1].id, firstAssistant.id);
  assert.equal(toolPart(persisted, call.toolCallId).state, 'output-available');
  assert.equal(persisted[2].parts.find((p) => p.type === 'text').text, 'Tool results: getUserTimezone={"timezone":"Europe/Paris"}');
});

test('with two parallel client calls, the first result does not continue and the second continues exactly once', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-barrier';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const r = await turn(a, 'both please [tools:getUserTimezone,getScreenSize]', { clientTools: [TIMEZONE_TOOL, SCREEN_TOOL] });
  const calls = callsOf(r);
  assert.deepEqual(calls.map((c) => c.toolName), ['getUserTimezone', 'getScreenSize']);
  const [tz, screen] = calls;

  a.send(toolResult(tz.toolCallId, 'getUserTimezone', { timezone: 'Asia/Tokyo' }, { autoContinue: true }));
  await b.waitFor('cf_agent_message_updated');
  await sleep(400); // well past the coalescing window
  assert.equal(w.model.requests.length, 1, 'the batch is incomplete: no continuation yet');
  const waiting = await probeAnswer(a);
  assert.equal(waiting.type, 'cf_agent_stream_pending', 'a continuation is owed but not started');

  const markB = b.mark();
  a.send(toolResult(screen.toolCallId, 'getScreenSize', { width: 1920, height: 1080 }, { autoContinue: true }));
  // The owner parked by its probe is offered the stream when it starts.
  const resuming = await a.waitFor((f) => f.type === 'cf_agent_stream_resuming' && f.id === waiting.id, TURN_MS);
  a.send({ type: 'cf_agent_stream_resume_ack', id: resuming.id });
  await a.waitFor(isDone(waiting.id), TURN_MS);
  const done = await b.waitFor(isDone(waiting.id), TURN_MS);
  assert.equal(done.outcome, 'completed');
  assert.equal(done.continuation, true);

  await sleep(300);
  await assertIdle(a);
  const requests = w.model.requests;
  assert.equal(requests.length, 2, 'exactly one continuation');
  const results = toolMessages(requests[1]);
  assert.deepEqual(results.map((m) => m.tool_call_id), [tz.toolCallId, screen.toolCallId]);
  assert.deepEqual(JSON.parse(results[0].content), { timezone: 'Asia/Tokyo' });
  assert.deepEqual(JSON.parse(results[1].content), { width: 1920, height: 1080 });
  const continuations = b.since(markB).filter((f) => isResponse()(f) && f.done && f.continuation);
  assert.equal(continuations.length, 1);
});

test('an output-error sibling sent with autoContinue:false completes a batch another result asked to continue', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-error-sibling';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const r = await turn(a, '[tools:getUserTimezone,getScreenSize]', { clientTools: [TIMEZONE_TOOL, SCREEN_TOOL] });
  const [tz, screen] = callsOf(r);

  a.send(toolResult(tz.toolCallId, 'getUserTimezone', { timezone: 'UTC' }, { autoContinue: true }));
  await b.waitFor('cf_agent_message_updated');
  const markB = b.mark();
  // The stock hook always sends autoContinue:false with output-error.
  a.send(toolResult(screen.toolCallId, 'getScreenSize', null, { state: 'output-error', errorText: 'No screen', autoContinue: false }));
  const done = await b.waitFor((f) => isResponse()(f) && f.done && f.continuation, TURN_MS);
  assert.equal(done.outcome, 'completed');
  await sleep(300);
  await assertIdle(b);
  assert.equal(w.model.requests.length, 2, 'one continuation');
  const results = toolMessages(w.model.requests[1]);
  assert.deepEqual(results.map((m) => m.tool_call_id), [tz.toolCallId, screen.toolCallId]);
  assert.equal(results[1].content, 'No screen');
  assert.equal(b.since(markB).filter((f) => isResponse()(f) && f.done).length, 1);
  const persisted = await getMessages(w.url, AGENT, room);
  assert.equal(toolPart(persisted, screen.toolCallId).state, 'output-error');
  assert.equal(persisted.at(-1).role, 'assistant');
});

test('a lone output-error result with autoContinue:false does not start a continuation', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-error-alone';
  const a = await tab(w, room);
  const r = await turn(a, "what's my timezone?", { clientTools: [TIMEZONE_TOOL] });
  const [call] = callsOf(r);
  a.send(toolResult(call.toolCallId, 'getUserTimezone', null, { state: 'output-error', errorText: 'Denied', autoContinue: false }));
  await a.waitFor('cf_agent_message_updated');
  await sleep(300);
  await assertIdle(a);
  assert.equal(w.model.requests.length, 1);
  const persisted = await getMessages(w.url, AGENT, room);
  assert.deepEqual(persisted.map((m) => m.role), ['user', 'assistant']);
});

test('client tools are sticky: sent once, they are still offered to the model after a restart', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-sticky';
  const a = await tab(w, room);
  await turn(a, 'hello', { clientTools: [TIMEZONE_TOOL] });
  assert.ok(offeredTools(w.model.requests[0]).includes('getUserTimezone'));

  await w.restart();
  const c = await tab(w, room);
  const history = await getMessages(w.url, AGENT, room);
  const r = await turn(c, "what's my timezone?", {}, history); // no clientTools key at all
  const requests = await waitForModelRequests(w.model, 2);
  assert.ok(offeredTools(requests[1]).includes('getUserTimezone'), 'still offered after the restart');
  const [call] = callsOf(r);
  assert.equal(call.toolName, 'getUserTimezone');
  assert.equal(toolPart(await getMessages(w.url, AGENT, room), call.toolCallId).state, 'input-available');

  // The stored list also drives the continuation after another restart.
  await w.restart();
  const d = await tab(w, room);
  d.send(toolResult(call.toolCallId, 'getUserTimezone', { timezone: 'UTC' }, { autoContinue: true }));
  const { id } = await followContinuation(d);
  assert.ok(id);
  const third = (await waitForModelRequests(w.model, 3))[2];
  assert.ok(offeredTools(third).includes('getUserTimezone'));
  assert.deepEqual(JSON.parse(toolMessages(third)[0].content), { timezone: 'UTC' });

  // An explicit empty list clears them.
  const history2 = await getMessages(w.url, AGENT, room);
  await turn(d, 'hello again', { clientTools: [] }, history2);
  assert.ok(!offeredTools(w.model.requests.at(-1)).includes('getUserTimezone'));
});

test('approving a tool call runs it in the continuation, patches the original message everywhere, and the model carries on', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-approve';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const r = await turn(a, 'please delete notes.txt [delay:30]');
  assert.equal(r.done.outcome, 'completed');
  const types = typesOf(r.frames, r.id).filter((x) => x !== 'tool-input-delta');
  assert.deepEqual(types, ['start', 'start-step', 'tool-input-start', 'tool-input-available', 'tool-approval-request', 'finish-step', 'finish']);
  const [call] = callsOf(r);
  assert.equal(call.toolName, 'delete_file');
  assert.deepEqual(call.input, { path: 'notes.txt' });
  const request = r.chunks.find((c) => c.type === 'tool-approval-request');
  assert.equal(request.toolCallId, call.toolCallId);
  assert.equal(typeof request.approvalId, 'string');
  const [, original] = await getMessages(w.url, AGENT, room);
  const pending = toolPart([original], call.toolCallId);
  assert.equal(pending.type, 'tool-delete_file');
  assert.equal(pending.state, 'approval-requested');
  assert.deepEqual(pending.approval, { id: request.approvalId });
  assert.equal(w.model.requests.length, 1, 'the tool did not run');

  const markB = b.mark();
  a.send({ type: 'cf_agent_tool_approval', toolCallId: call.toolCallId, approved: true, autoContinue: true });
  const responded = await b.waitFor('cf_agent_message_updated');
  assert.equal(responded.message.id, original.id);
  const respondedPart = toolPart([responded.message], call.toolCallId);
  assert.equal(respondedPart.state, 'approval-responded');
  assert.deepEqual(respondedPart.approval, { id: request.approvalId, approved: true });

  const { id } = await followContinuation(a);
  await b.waitFor(isDone(id), TURN_MS);
  const framesB = b.since(markB);
  const chunks = chunkFrames(framesB, id);
  assert.ok(responsesOf(framesB, id).every((f) => f.continuation === true));
  const ctypes = chunks.map((f) => JSON.parse(f.body).type);
  assert.deepEqual(ctypes.slice(0, 3), ['start', 'tool-output-available', 'start-step']);
  const output = JSON.parse(chunks[1].body);
  assert.equal(output.toolCallId, call.toolCallId, 'the original toolCallId');
  assert.deepEqual(output.output, { deleted: 'notes.txt' });
  // The cross-message update of the original message, broadcast just before that chunk.
  const updates = framesB.filter((f) => f.type === 'cf_agent_message_updated');
  assert.equal(updates.length, 2);
  const cross = updates[1];
  assert.equal(cross.message.id, original.id);
  assert.equal(toolPart([cross.message], call.toolCallId).state, 'output-available');
  assert.deepEqual(toolPart([cross.message], call.toolCallId).output, { deleted: 'notes.txt' });
  assert.ok(framesB.indexOf(cross) < framesB.indexOf(chunks[1]), 'update before the tool-output-available chunk');
  assert.match(textOf(framesB, id), /^Tool results: delete_file=\{"deleted":"notes.txt"\}/);

  const persisted = await getMessages(w.url, AGENT, room);
  const settled = toolPart(persisted, call.toolCallId);
  assert.equal(settled.state, 'output-available');
  assert.deepEqual(settled.output, { deleted: 'notes.txt' });
  assert.equal(persisted.find((m) => m.id === original.id).parts.filter((p) => p.toolCallId === call.toolCallId).length, 1);
  const second = w.model.requests[1];
  assert.deepEqual(JSON.parse(toolMessages(second)[0].content), { deleted: 'notes.txt' });
  await assertIdle(a);
  assert.equal(w.model.requests.length, 2);
});

test('denying a tool call never runs it and tells the model "Tool call execution denied."', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-deny';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const r = await turn(a, 'delete secrets.txt');
  const [call] = callsOf(r);
  const markB = b.mark();
  a.send({ type: 'cf_agent_tool_approval', toolCallId: call.toolCallId, approved: false, autoContinue: true });
  const updated = await b.waitFor('cf_agent_message_updated');
  const part = toolPart([updated.message], call.toolCallId);
  assert.equal(part.state, 'output-denied');
  assert.equal(part.approval.approved, false);

  const { id } = await followContinuation(a);
  await b.waitFor(isDone(id), TURN_MS);
  const chunks = chunkFrames(b.since(markB), id).map((f) => JSON.parse(f.body));
  assert.ok(!chunks.some((c) => c.type === 'tool-output-available'), 'the tool never ran');
  const [result] = toolMessages(w.model.requests[1]);
  assert.equal(result.tool_call_id, call.toolCallId);
  assert.equal(result.content, 'Tool call execution denied.');
  const persisted = toolPart(await getMessages(w.url, AGENT, room), call.toolCallId);
  assert.equal(persisted.state, 'output-denied');
  assert.equal(persisted.output, undefined);
});

test('an unanswered approval is repaired to output-error when the user sends a new message', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-repair';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const r = await turn(a, 'delete draft.md');
  const [call] = callsOf(r);
  const history = await getMessages(w.url, AGENT, room);
  assert.equal(toolPart(history, call.toolCallId).state, 'approval-requested');

  const markB = b.mark();
  const r2 = await turn(a, 'never mind, what is new?', {}, history);
  assert.equal(r2.done.outcome, 'completed');
  await b.waitFor(isDone(r2.id), TURN_MS);
  const expected = 'The tool call was interrupted before a result was recorded.';
  const repairedPart = toolPart(await getMessages(w.url, AGENT, room), call.toolCallId);
  assert.equal(repairedPart.state, 'output-error');
  assert.equal(repairedPart.errorText, expected);
  // Broadcast before the model was called (before the new turn's first chunk) to every tab.
  for (const frames of [r2.frames, b.since(markB)]) {
    const repairAt = frames.findIndex((f) => f.type === 'cf_agent_chat_messages' && toolPart(f.messages, call.toolCallId)?.state === 'output-error');
    assert.ok(repairAt >= 0, 'repair broadcast');
    assert.ok(repairAt < frames.indexOf(chunkFrames(frames, r2.id)[0]), 'repair before the new stream');
  }
  const second = w.model.requests[1];
  const [result] = toolMessages(second);
  assert.equal(result.tool_call_id, call.toolCallId);
  assert.equal(result.content, expected);
  assert.ok(!r2.chunks.some((c) => c.type === 'tool-output-available'), 'delete never ran');
});

test('a tab joining mid-stream is offered the stream instead of the transcript, then gets replay, replayComplete and live frames after its ACK', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-join';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'count slowly [tokens:60] [delay:20]')]));
  await a.waitFor((f) => f.id === id && f.body?.includes('"w5 "'), TURN_MS);

  const b = await connect(w.url, AGENT, room);
  await b.waitFor('cf_agent_mcp_servers');
  assert.deepEqual(b.frames.slice(0, 4).map((f) => f.type), ['cf_agent_stream_resuming', 'cf_agent_identity', 'cf_agent_state', 'cf_agent_mcp_servers']);
  assert.deepEqual(b.frames[0], { type: 'cf_agent_stream_resuming', id });
  assert.ok(!b.frames.some((f) => f.type === 'cf_agent_chat_messages'), 'no transcript while a stream is offered');
  // Its probe (sent by the real client on connect) is answered with the same offer.
  const probeId = probe(b);
  assert.deepEqual(await b.waitFor((f) => f.probeId === probeId), { type: 'cf_agent_stream_resuming', id, probeId });

  // No live chunks until it ACKs, even while the stream goes on.
  const aCount = chunkFrames(a.frames, id).length;
  await waitUntil(() => chunkFrames(a.frames, id).length >= aCount + 5, { what: 'more chunks on A' });
  assert.equal(responsesOf(b.frames, id).length, 0, 'nothing before the ACK');

  const mark = b.mark();
  b.send({ type: 'cf_agent_stream_resume_ack', id });
  const done = await b.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'completed');
  const mine = responsesOf(b.since(mark), id);
  const completeAt = mine.findIndex((f) => f.replayComplete);
  assert.ok(completeAt > 0, 'a replayComplete frame after some replayed chunks');
  const replayed = mine.slice(0, completeAt);
  assert.ok(replayed.every((f) => f.replay === true && f.done === false && typeof f.seq === 'number'));
  assert.deepEqual(replayed.map((f) => f.seq), replayed.map((_, i) => i));
  assert.deepEqual(mine[completeAt], { type: 'cf_agent_use_chat_response', id, body: '', done: false, replay: true, replayComplete: true });
  const live = mine.slice(completeAt + 1).filter((f) => !f.done);
  assert.ok(live.length > 0, 'live frames follow');
  assert.ok(live.every((f) => !f.replay));
  assert.deepEqual(live.map((f) => f.seq), live.map((_, i) => completeAt + i), 'seq continues where the replay stopped');

  // Replay + live is exactly what the first tab saw.
  await a.waitFor(isDone(id), TURN_MS);
  const aChunks = chunkFrames(a.frames, id).map((f) => [f.seq, f.body]);
  const bChunks = [...replayed, ...live].map((f) => [f.seq, f.body]);
  assert.deepEqual(bChunks, aChunks);
  const transcript = b.since(mark).filter((f) => f.type === 'cf_agent_chat_messages').at(-1);
  assert.deepEqual(transcript.messages, await getMessages(w.url, AGENT, room));
});

test('a tab that never ACKs an offered stream still gets the end-of-turn transcript and terminal frame', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-no-ack';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'count [tokens:30] [delay:20]')]));
  await a.waitFor((f) => f.id === id && f.body?.includes('text-delta'), TURN_MS);
  const b = await connect(w.url, AGENT, room);
  await b.waitFor('cf_agent_mcp_servers');
  assert.deepEqual(b.frames[0], { type: 'cf_agent_stream_resuming', id });
  const done = await b.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'completed');
  assert.deepEqual(done.messageIds, [uid]);
  assert.equal(chunkFrames(b.frames, id).length, 0, 'no chunks without an ACK');
  const transcript = b.frames.find((f) => f.type === 'cf_agent_chat_messages');
  assert.ok(b.frames.indexOf(transcript) < b.frames.indexOf(done), 'transcript before the terminal frame');
  assert.deepEqual(transcript.messages, await getMessages(w.url, AGENT, room));
});

test('an ACK that arrives after the stream ended is answered with a bare replayed terminal frame carrying the messageIds', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-late-ack';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'count [tokens:20] [delay:20]')]));
  await a.waitFor((f) => f.id === id && f.body?.includes('text-delta'), TURN_MS);
  const b = await connect(w.url, AGENT, room);
  await b.waitFor('cf_agent_mcp_servers');
  await b.waitFor(isDone(id), TURN_MS);
  const mark = b.mark();
  b.send({ type: 'cf_agent_stream_resume_ack', id });
  const answer = await b.waitFor((f) => isResponse(id)(f) && f.replay);
  assert.deepEqual(answer, { type: 'cf_agent_use_chat_response', id, body: '', done: true, replay: true, messageIds: [uid] });
  assert.equal(b.since(mark).length, 1);
});

test('a clientTools list sent with a tool result replaces the stored list', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-result-tools';
  const a = await tab(w, room);
  const r = await turn(a, "what's my timezone?", { clientTools: [TIMEZONE_TOOL] });
  const [call] = callsOf(r);
  a.send(toolResult(call.toolCallId, 'getUserTimezone', { timezone: 'UTC' }, { autoContinue: true, clientTools: [SCREEN_TOOL] }));
  await followContinuation(a);
  const continuation = (await waitForModelRequests(w.model, 2))[1];
  assert.ok(offeredTools(continuation).includes('getScreenSize'));
  assert.ok(!offeredTools(continuation).includes('getUserTimezone'));
  const history = await getMessages(w.url, AGENT, room);
  await turn(a, 'hello', {}, history);
  assert.ok(offeredTools(w.model.requests.at(-1)).includes('getScreenSize'), 'still the replaced list on the next turn');
});

test('an approval for an unknown tool call is ignored without any answer, as Think does', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-unknown-approval';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const mark = a.mark();
  const markB = b.mark();
  a.send({ type: 'cf_agent_tool_approval', toolCallId: 'call_nope', approved: true, autoContinue: true });
  await assertIdle(a);
  assert.deepEqual(a.since(mark).map((f) => f.type), ['cf_agent_stream_resume_none']);
  assert.deepEqual(b.since(markB), []);
  assert.equal(w.model.requests.length, 0);
});

test('while a continuation owned by another open tab streams, a probe is answered resume_none "continuation-owned"', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-owned';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const r = await turn(a, "what's my timezone? [delay:60]", { clientTools: [TIMEZONE_TOOL] });
  const [call] = callsOf(r);
  a.send(toolResult(call.toolCallId, 'getUserTimezone', { timezone: 'UTC' }, { autoContinue: true }));
  // Wait until the continuation streams (b sees its first chunk live).
  const first = await b.waitFor((f) => isResponse()(f) && f.continuation && !f.done, TURN_MS);
  const probeId = probe(b);
  assert.deepEqual(await b.waitFor((f) => f.probeId === probeId), { type: 'cf_agent_stream_resume_none', reason: 'continuation-owned', probeId });
  // b keeps receiving the live continuation anyway.
  assert.equal((await b.waitFor(isDone(first.id), TURN_MS)).outcome, 'completed');
});

test('while a continuation waits for the rest of its batch, a probe from a tab that does not own it is answered idle', async (t) => {
  const w = await workerFor(t);
  const room = 'ct-pending-other';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const r = await turn(a, '[tools:getUserTimezone,getScreenSize]', { clientTools: [TIMEZONE_TOOL, SCREEN_TOOL] });
  const [tz] = callsOf(r);
  a.send(toolResult(tz.toolCallId, 'getUserTimezone', { timezone: 'UTC' }, { autoContinue: true }));
  await b.waitFor('cf_agent_message_updated');
  const own = await probeAnswer(a);
  assert.equal(own.type, 'cf_agent_stream_pending', 'the owner is told a continuation is coming');
  const other = await probeAnswer(b);
  assert.equal(other.type, 'cf_agent_stream_resume_none');
  assert.equal(other.reason, 'idle');
  // A tab opening now is not parked either: plain connect frames.
  const c = await tab(w, room);
  assert.deepEqual(c.frames.map((f) => f.type), ['cf_agent_chat_messages', 'cf_agent_identity', 'cf_agent_state', 'cf_agent_mcp_servers']);
});

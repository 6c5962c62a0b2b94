// End-to-end: the foundation on the real built worker under Miniflare, driven over real
// WebSockets exactly as useAgentChat frames them: connect frames, get-messages, routing, the idle
// resume probe, a text turn seen by two tabs, a server-tool turn, model HTTP errors, cancel,
// clear, regenerate, restart, and malformed frames.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  connect, chatRequest, userMessage, getMessages, isDone, textOf,
} from '../support/harness.mjs';
import {
  workerFor, rid, responsesOf, chunkFrames, typesOf, firstIndex, waitForModelRequests,
  modelTexts, toolMessages, probe, waitUntil, tab,
} from '../support/e2e.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 15000;

/** Connect and wait until the connect frames (ending with mcp_servers) arrived. */
test('a new connection receives the transcript (connect:true), then identity and the agent state, then the MCP state, and nothing else', async (t) => {
  const w = await workerFor(t);
  const c = await tab(w, 'room-connect');
  assert.deepEqual(c.frames.map((f) => f.type), [
    'cf_agent_chat_messages', 'cf_agent_identity', 'cf_agent_state', 'cf_agent_mcp_servers',
  ]);
  assert.deepEqual(c.frames[0], { type: 'cf_agent_chat_messages', messages: [], connect: true });
  assert.deepEqual(c.frames[1], { type: 'cf_agent_identity', name: 'room-connect', agent: 'chat-agent', stateFollows: true });
  assert.deepEqual(c.frames[2], { type: 'cf_agent_state', state: {} });
  assert.deepEqual(c.frames[3], {
    type: 'cf_agent_mcp_servers', mcp: { servers: {}, tools: [], prompts: [], resources: [] },
  });
});

test('get-messages returns the transcript as JSON, ignoring _pk and keeping extra query params working', async (t) => {
  const w = await workerFor(t);
  const room = 'room-get';
  const c = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  c.send(chatRequest(id, [userMessage(uid, 'hello')]));
  await c.waitFor(isDone(id), TURN_MS);

  const url = new URL(`/agents/chat-agent/${room}/get-messages`, w.url);
  url.searchParams.set('token', 'secret-123');
  url.searchParams.set('_pk', 'some-connection');
  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  const messages = await res.json();
  assert.ok(Array.isArray(messages));
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
  assert.equal(messages[0].id, uid);
  assert.deepEqual(messages, await getMessages(w.url, AGENT, room));

  // Another instance name is another conversation.
  assert.deepEqual(await getMessages(w.url, AGENT, 'room-get-other', { query: { token: 'x' } }), []);
});

test('an unknown agent namespace is answered 400 "Invalid request", for HTTP and WebSocket alike', async (t) => {
  const w = await workerFor(t);
  const res = await w.fetch('/agents/no-such-agent/room/get-messages');
  assert.equal(res.status, 400);
  assert.equal(await res.text(), 'Invalid request');
  await assert.rejects(connect(w.url, 'no-such-agent', 'room'), /HTTP 400/);
  // Paths outside /agents/ are not agent requests.
  assert.equal((await w.fetch('/nothing-here')).status, 404);
});

test('a resume probe on an idle agent is answered resume_none with reason idle and the same probeId', async (t) => {
  const w = await workerFor(t);
  const c = await tab(w, 'room-probe');
  const mark = c.mark();
  const probeId = probe(c);
  const answer = await c.waitFor((f) => f.type?.startsWith('cf_agent_stream_'));
  assert.deepEqual(answer, { type: 'cf_agent_stream_resume_none', reason: 'idle', probeId });
  assert.equal(c.since(mark).length, 1, 'exactly one answer');
});

test('a text turn streams to both tabs in order with contiguous seq, the requester gets no echo of its message but its message as stored, and the other tab gets the transcript before the terminal frame', async (t) => {
  const w = await workerFor(t);
  const room = 'room-basic';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const markA = a.mark();
  const markB = b.mark();
  const id = rid();
  const uid = rid('u');
  // Paced: each word reaches the agent in a read of its own, so each is its own delta (words that
  // arrive together are joined into one, tests/e2e/joined-deltas.test.mjs).
  a.send(chatRequest(id, [userMessage(uid, '[delay:5] hello world')]));
  const doneA = await a.waitFor(isDone(id), TURN_MS);
  const doneB = await b.waitFor(isDone(id), TURN_MS);

  // Terminal frame: completed, with the ids of the request's trailing user messages.
  const terminal = { type: 'cf_agent_use_chat_response', id, body: '', done: true, outcome: 'completed', messageIds: [uid] };
  assert.deepEqual(doneA, terminal);
  assert.deepEqual(doneB, terminal);

  const persisted = await getMessages(w.url, AGENT, room);
  assert.equal(persisted.length, 2);
  const [user, assistant] = persisted;
  assert.equal(user.id, uid);
  assert.equal(user.role, 'user');
  assert.equal(user.metadata?.channel, 'web');
  assert.deepEqual(user.parts, [{ type: 'text', text: '[delay:5] hello world' }]);
  assert.equal(assistant.role, 'assistant');
  assert.equal(assistant.parts.find((p) => p.type === 'text')?.text, 'You said: [delay:5] hello world');
  assert.equal(assistant.parts.find((p) => p.type === 'text')?.state, 'done');

  const framesA = a.since(markA);
  const framesB = b.since(markB);
  const chunksA = chunkFrames(framesA, id);

  // Chunk order and seq.
  const types = typesOf(framesA, id);
  assert.equal(types[0], 'start');
  assert.equal(types[1], 'start-step');
  assert.equal(types[2], 'text-start');
  assert.deepEqual(types.slice(-3), ['text-end', 'finish-step', 'finish']);
  assert.ok(types.slice(3, -3).length >= 2 && types.slice(3, -3).every((x) => x === 'text-delta'), types.join(','));
  assert.deepEqual(chunksA.map((f) => f.seq), chunksA.map((_, i) => i), 'seq from 0, contiguous');
  assert.ok(chunksA.every((f) => f.done === false && !f.continuation && !f.replay));
  assert.equal(textOf(framesA, id), 'You said: [delay:5] hello world');
  const start = JSON.parse(chunksA[0].body);
  assert.equal(start.messageId, assistant.id, 'start.messageId is the persisted assistant id');
  assert.equal(JSON.parse(chunksA.at(-1).body).finishReason, 'stop');

  // The other tab sees the user message first, then every chunk, identically.
  const chunksB = chunkFrames(framesB, id);
  assert.deepEqual(chunksB, chunksA, 'the other tab gets every chunk live, same body and seq');
  const userBroadcast = firstIndex(framesB, 'cf_agent_chat_messages');
  assert.ok(userBroadcast >= 0 && userBroadcast < framesB.indexOf(chunksB[0]), 'user message broadcast before the first chunk');
  assert.deepEqual(framesB[userBroadcast].messages.map((m) => m.id), [uid]);
  assert.equal(framesB[userBroadcast].connect, undefined);

  // The requester gets no echo of its own message and no transcript: its list is the store's but
  // for its own message, which it is sent as stored (marked `channel: "web"`) as soon as the model
  // begins to answer, so the turn's end sends it only the last chunks and the terminal frame.
  assert.equal(framesA.filter((f) => f.type === 'cf_agent_chat_messages').length, 0, 'no transcript to the requester');
  const updates = framesA.filter((f) => f.type === 'cf_agent_message_updated');
  assert.deepEqual(updates.map((f) => f.message), [user], 'its message as stored');
  const updatedAt = framesA.indexOf(updates[0]);
  const firstDelta = framesA.findIndex((f) => f.id === id && f.body?.includes('"type":"text-delta"'));
  assert.ok(updatedAt > firstDelta, 'once the model answers');
  assert.ok(updatedAt < framesA.indexOf(chunksA.at(-1)), 'while the answer streams, before its last chunk');
  // The other tab gets the end-of-turn transcript after the last chunk, before the terminal frame.
  const last = framesB.filter((f) => f.type === 'cf_agent_chat_messages').at(-1);
  const at = framesB.indexOf(last);
  assert.ok(at > framesB.indexOf(chunksB.at(-1)), 'end-of-turn transcript after the last chunk');
  assert.ok(at < framesB.findIndex(isDone(id)), 'end-of-turn transcript before the terminal frame');
  assert.deepEqual(last.messages, persisted);

  // What the model was sent.
  const [body] = await waitForModelRequests(w.model, 1);
  assert.equal(body.stream, true);
  assert.equal(body.messages[0].role, 'system');
  assert.deepEqual(modelTexts(body), ['[delay:5] hello world']);
  assert.ok(body.tools.some((x) => (x.function?.name ?? x.name) === 'get_weather'));
});

test('a server-tool turn streams the call, its output and the follow-up text, and persists one assistant message', async (t) => {
  const w = await workerFor(t);
  const room = 'room-tool';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const markB = b.mark();
  const id = rid();
  const uid = rid('u');
  const mark = a.mark();
  a.send(chatRequest(id, [userMessage(uid, "what's the weather in Paris?")]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'completed');
  await b.waitFor(isDone(id), TURN_MS);

  const frames = a.since(mark);
  const chunks = chunkFrames(frames, id).map((f) => JSON.parse(f.body));
  const types = chunks.map((c) => c.type);
  const seqTypes = types.filter((x, i) => !(x === types[i - 1] && (x === 'tool-input-delta' || x === 'text-delta')));
  assert.deepEqual(seqTypes, [
    'start', 'start-step', 'tool-input-start', 'tool-input-delta', 'tool-input-available',
    'tool-output-available', 'finish-step', 'start-step', 'text-start', 'text-delta', 'text-end',
    'finish-step', 'finish',
  ]);
  const callStart = chunks.find((c) => c.type === 'tool-input-start');
  assert.equal(callStart.toolName, 'get_weather');
  const available = chunks.find((c) => c.type === 'tool-input-available');
  assert.deepEqual(available.input, { city: 'Paris' });
  assert.equal(available.toolCallId, callStart.toolCallId);
  const output = chunks.find((c) => c.type === 'tool-output-available');
  assert.equal(output.toolCallId, callStart.toolCallId);
  assert.deepEqual(output.output, { city: 'Paris', tempC: 21 });
  assert.deepEqual(chunkFrames(b.since(markB), id), chunkFrames(frames, id), 'other tab sees the same chunks');

  const persisted = await getMessages(w.url, AGENT, room);
  assert.deepEqual(persisted.map((m) => m.role), ['user', 'assistant']);
  const parts = persisted[1].parts;
  const tool = parts.find((p) => p.type === 'tool-get_weather');
  assert.equal(tool.state, 'output-available');
  assert.equal(tool.toolCallId, callStart.toolCallId);
  assert.deepEqual(tool.input, { city: 'Paris' });
  assert.deepEqual(tool.output, { city: 'Paris', tempC: 21 });
  assert.equal(parts.filter((p) => p.type === 'step-start').length, 2);
  assert.match(parts.find((p) => p.type === 'text').text, /^Tool results: get_weather=/);

  // The model's second step saw the call and its result.
  const requests = await waitForModelRequests(w.model, 2);
  assert.equal(requests.length, 2);
  const second = requests[1];
  const call = second.messages.find((m) => m.role === 'assistant' && m.tool_calls?.length);
  assert.equal(call.tool_calls[0].id, callStart.toolCallId);
  assert.equal(call.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.tool_calls[0].function.arguments), { city: 'Paris' });
  const [result] = toolMessages(second);
  assert.equal(result.tool_call_id, callStart.toolCallId);
  assert.deepEqual(JSON.parse(result.content), { city: 'Paris', tempC: 21 });
});

test('a model HTTP error reaches every tab as readable error text, then a terminal error outcome, and no assistant is persisted', async (t) => {
  const w = await workerFor(t);
  const room = 'room-http';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const markA = a.mark();
  const markB = b.mark();
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'please fail [http:401]')]));
  const doneA = await a.waitFor(isDone(id), TURN_MS);
  await b.waitFor(isDone(id), TURN_MS);

  for (const frames of [a.since(markA), b.since(markB)]) {
    const mine = responsesOf(frames, id);
    assert.equal(JSON.parse(mine[0].body).type, 'start', 'the error arrives after the start chunk');
    const errorAt = mine.findIndex((f) => f.error === true);
    assert.ok(errorAt >= 0, 'an error frame is sent');
    const error = mine[errorAt];
    assert.equal(error.done, false);
    assert.equal(typeof error.body, 'string');
    assert.match(error.body, /401/);
    assert.match(error.body, /scripted error 401/, 'the provider message is readable, not JSON');
    assert.doesNotThrow(() => assert.ok(!error.body.trim().startsWith('{')));
    assert.deepEqual(error.messageIds, [uid]);
    const done = mine.at(-1);
    assert.equal(done.done, true);
    assert.equal(done.outcome, 'error');
    assert.equal(mine.indexOf(done), mine.length - 1);
    assert.ok(errorAt < mine.length - 1, 'the error precedes the terminal frame');
    assert.ok(mine.slice(0, errorAt).every((f) => !f.done && JSON.parse(f.body).type !== 'error'));
  }
  assert.deepEqual(doneA.messageIds, [uid]);
  const persisted = await getMessages(w.url, AGENT, room);
  assert.deepEqual(persisted.map((m) => m.id), [uid], 'only the user message is kept');
});

test('cancelling mid-stream ends the turn aborted and persists the partial answer', async (t) => {
  const w = await workerFor(t);
  const room = 'room-cancel';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  const mark = a.mark();
  a.send(chatRequest(id, [userMessage(uid, 'long answer [tokens:200] [delay:20]')]));
  // Let a few words stream, then stop.
  await a.waitFor((f) => f.id === id && f.body?.includes('"w3 "'), TURN_MS);
  a.send({ id, type: 'cf_agent_chat_request_cancel' });
  const done = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'aborted');
  assert.deepEqual(done.messageIds, [uid]);
  assert.equal((await b.waitFor(isDone(id), TURN_MS)).outcome, 'aborted');

  const streamed = textOf(a.since(mark), id);
  const persisted = await getMessages(w.url, AGENT, room);
  assert.deepEqual(persisted.map((m) => m.role), ['user', 'assistant']);
  const text = persisted[1].parts.find((p) => p.type === 'text')?.text ?? '';
  assert.ok(text.startsWith('w1 w2 w3'), `partial kept: ${text}`);
  assert.ok(!text.includes('w200'), 'the answer was cut');
  assert.equal(text, streamed, 'the persisted partial is what was streamed');
  assert.equal(persisted[1].id, JSON.parse(chunkFrames(a.since(mark), id)[0].body).messageId);
  // The agent is idle again.
  const probeId = probe(a);
  assert.deepEqual(await a.waitFor('cf_agent_stream_resume_none'), { type: 'cf_agent_stream_resume_none', reason: 'idle', probeId });
});

test('clearing from one tab empties the history and tells only the other tab to clear', async (t) => {
  const w = await workerFor(t);
  const room = 'room-clear';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'remember me')]));
  await a.waitFor(isDone(id), TURN_MS);
  await b.waitFor(isDone(id), TURN_MS);
  assert.equal((await getMessages(w.url, AGENT, room)).length, 2);

  const markA = a.mark();
  a.send({ type: 'cf_agent_chat_clear' });
  assert.deepEqual(await b.waitFor('cf_agent_chat_clear'), { type: 'cf_agent_chat_clear' });
  assert.deepEqual(await getMessages(w.url, AGENT, room), []);
  // The sender does not get its own clear back (probe to fence the frames it did get).
  const probeId = probe(a);
  await a.waitFor((f) => f.probeId === probeId);
  assert.ok(!a.since(markA).some((f) => f.type === 'cf_agent_chat_clear'));
  // A new tab starts empty, and the next turn sees no old history.
  const c = await tab(w, room);
  assert.deepEqual(c.frames[0].messages, []);
  const before = w.model.requests.length;
  const id2 = rid();
  c.send(chatRequest(id2, [userMessage(rid('u'), 'fresh start')]));
  await c.waitFor(isDone(id2), TURN_MS);
  assert.deepEqual(modelTexts(w.model.requests[before]), ['fresh start']);
});

test('regenerate replaces the last assistant message with a new one', async (t) => {
  const w = await workerFor(t);
  const room = 'room-regen';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const uid = rid('u');
  const user = userMessage(uid, 'tell me something');
  const id1 = rid();
  a.send(chatRequest(id1, [user]));
  await a.waitFor(isDone(id1), TURN_MS);
  const [, first] = await getMessages(w.url, AGENT, room);

  const id2 = rid();
  const mark = a.mark();
  // The AI SDK removes the assistant being regenerated: the request ends with the user message.
  a.send(chatRequest(id2, [{ ...user, metadata: { channel: 'web' } }], { trigger: 'regenerate-message' }));
  const done = await a.waitFor(isDone(id2), TURN_MS);
  assert.equal(done.outcome, 'completed');
  assert.deepEqual(done.messageIds, [uid]);
  await b.waitFor(isDone(id2), TURN_MS);

  const persisted = await getMessages(w.url, AGENT, room);
  assert.deepEqual(persisted.map((m) => m.role), ['user', 'assistant']);
  assert.equal(persisted[0].id, uid);
  assert.notEqual(persisted[1].id, first.id, 'a new assistant message');
  assert.equal(JSON.parse(chunkFrames(a.since(mark), id2)[0].body).messageId, persisted[1].id);
  const last = a.since(mark).filter((f) => f.type === 'cf_agent_chat_messages').at(-1);
  assert.deepEqual(last.messages.map((m) => m.id), [uid, persisted[1].id]);
  // The model was asked again without the old answer.
  const requests = await waitForModelRequests(w.model, 2);
  assert.deepEqual(requests[1].messages.map((m) => m.role), ['system', 'user']);
});

test('history survives a restart of the worker process', async (t) => {
  const w = await workerFor(t);
  const room = 'room-restart';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'before restart')]));
  await a.waitFor(isDone(id), TURN_MS);
  const before = await getMessages(w.url, AGENT, room);

  await w.restart();
  const closed = await a.waitForClose(10000);
  assert.notEqual(closed.code, 1000, 'the old socket dropped');
  assert.deepEqual(await getMessages(w.url, AGENT, room), before);
  const c = await tab(w, room);
  assert.deepEqual(c.frames[0], { type: 'cf_agent_chat_messages', messages: before, connect: true });
  assert.deepEqual(c.frames[1], { type: 'cf_agent_identity', name: room, agent: 'chat-agent', stateFollows: true });

  // A turn after the restart sends the whole history to the model.
  const id2 = rid();
  const n = w.model.requests.length;
  c.send(chatRequest(id2, [...before, userMessage(rid('u'), 'after restart')]));
  assert.equal((await c.waitFor(isDone(id2), TURN_MS)).outcome, 'completed');
  assert.deepEqual(modelTexts(w.model.requests[n]), ['before restart', 'after restart']);
  assert.equal((await getMessages(w.url, AGENT, room)).length, 4);
});

test('malformed frames get an error answer and the socket keeps working', async (t) => {
  const w = await workerFor(t);
  const room = 'room-malformed';
  const a = await tab(w, room);

  a.send('this is not json{');
  const notJson = await a.waitFor((f) => f.type === 'cf_agent_chat_error');
  assert.equal(typeof notJson.error, 'string');
  assert.match(notJson.error, /JSON/);

  // A chat request whose body is not JSON is answered on its request id, ending that request.
  const bad = rid();
  a.send({ id: bad, type: 'cf_agent_use_chat_request', init: { method: 'POST', body: '{oops' } });
  const badDone = await a.waitFor(isDone(bad));
  assert.equal(badDone.error, true);
  assert.ok(badDone.body.length > 0);

  // A request whose messages are not an array.
  const bad2 = rid();
  a.send({ id: bad2, type: 'cf_agent_use_chat_request', init: { method: 'POST', body: JSON.stringify({ messages: 3 }) } });
  assert.equal((await a.waitFor(isDone(bad2))).error, true);

  assert.ok(a.isOpen, 'socket still open');
  assert.deepEqual(await getMessages(w.url, AGENT, room), [], 'nothing was persisted');
  assert.equal(w.model.requests.length, 0, 'the model was not called');

  // The same socket still chats.
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'still here?')]));
  const done = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'completed');
  assert.equal(textOf(a.frames, id), 'You said: still here?');
});

test('two sockets opened with the same _pk are two distinct connections', async (t) => {
  const w = await workerFor(t);
  const room = 'room-same-pk';
  const a = await tab(w, room, { pk: 'same-pk' });
  const b = await tab(w, room, { pk: 'same-pk' });
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'hi twins')]));
  await a.waitFor(isDone(id), TURN_MS);
  await b.waitFor(isDone(id), TURN_MS);
  assert.ok(b.frames.some((f) => f.type === 'cf_agent_chat_messages' && !f.connect && f.messages.length === 1), 'b got the user-message broadcast a did not');
  assert.ok(!a.frames.some((f) => f.type === 'cf_agent_chat_messages' && !f.connect && f.messages.length === 1));
  assert.deepEqual(chunkFrames(b.frames, id), chunkFrames(a.frames, id));
  // Closing one leaves the other working.
  await a.close();
  const id2 = rid();
  b.send(chatRequest(id2, [...(await getMessages(w.url, AGENT, room)), userMessage(rid('u'), 'still there?')]));
  assert.equal((await b.waitFor(isDone(id2), TURN_MS)).outcome, 'completed');
});

test('after a model error, a reconnecting tab is offered the failed request and its ACK re-surfaces the error, until a new turn is accepted', async (t) => {
  const w = await workerFor(t);
  const room = 'room-error-resume';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, 'boom [http:400]')]));
  const failed = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(failed.outcome, 'error');
  const errorText = responsesOf(a.frames, id).find((f) => f.error).body;

  for (let i = 0; i < 2; i++) { // every reconnect re-surfaces it
    const c = await tab(w, room);
    assert.equal(c.frames[0].type, 'cf_agent_chat_messages', 'the error is not sent on connect');
    assert.ok(!c.frames.some((f) => f.type === 'cf_agent_use_chat_response'));
    const probeId = probe(c);
    assert.deepEqual(await c.waitFor((f) => f.probeId === probeId), { type: 'cf_agent_stream_resuming', id, probeId });
    c.send({ type: 'cf_agent_stream_resume_ack', id });
    const replayed = await c.waitFor(isDone(id));
    assert.equal(replayed.error, true);
    assert.equal(replayed.body, errorText);
    assert.deepEqual(replayed.messageIds, [uid]);
    await c.close();
  }

  // A new accepted turn clears the record.
  const id2 = rid();
  a.send(chatRequest(id2, [userMessage(uid, 'boom [http:400]'), userMessage(rid('u'), 'try again')]));
  assert.equal((await a.waitFor(isDone(id2), TURN_MS)).outcome, 'completed');
  const c = await tab(w, room);
  const probeId = probe(c);
  assert.deepEqual(await c.waitFor((f) => f.probeId === probeId), { type: 'cf_agent_stream_resume_none', reason: 'idle', probeId });
});

test('the ACK of a failed request replays the chunks it streamed before the error, as Think does', async (t) => {
  const w = await workerFor(t);
  const room = 'room-error-replay';
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'boom [http:400]')]));
  await a.waitFor(isDone(id), TURN_MS);
  const streamed = chunkFrames(a.frames, id);
  const c = await tab(w, room);
  const probeId = probe(c);
  await c.waitFor((f) => f.probeId === probeId);
  c.send({ type: 'cf_agent_stream_resume_ack', id });
  await c.waitFor(isDone(id));
  const replayed = chunkFrames(c.frames, id);
  assert.deepEqual(replayed.map((f) => [f.seq, f.body, f.replay]), streamed.map((f) => [f.seq, f.body, true]));
});

test('documented ignores: a non-POST chat request, a client transcript push, an unknown frame type and a cancel of an unknown id change nothing and get no answer', async (t) => {
  const w = await workerFor(t);
  const room = 'room-ignores';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'keep me')]));
  await a.waitFor(isDone(id), TURN_MS);
  await b.waitFor(isDone(id), TURN_MS);
  const before = await getMessages(w.url, AGENT, room);
  const markA = a.mark();
  const markB = b.mark();
  a.send({ id: rid(), type: 'cf_agent_use_chat_request', init: { method: 'GET' } });
  a.send({ type: 'cf_agent_chat_messages', messages: [userMessage(rid('u'), 'pushed by the client')] });
  a.send({ type: 'my_app_ping', hello: 'world' });
  a.send({ id: 'no-such-request', type: 'cf_agent_chat_request_cancel' });
  const probeId = probe(a); // fence: answered after everything above
  assert.deepEqual(await a.waitFor((f) => f.probeId === probeId), { type: 'cf_agent_stream_resume_none', reason: 'idle', probeId });
  assert.equal(a.since(markA).length, 1, 'only the probe was answered');
  assert.deepEqual(b.since(markB), []);
  assert.deepEqual(await getMessages(w.url, AGENT, room), before);
  assert.equal(w.model.requests.length, 1);
});

test('a user message edited by id is updated in place, and new user messages are appended', async (t) => {
  const w = await workerFor(t);
  const room = 'room-edit';
  const a = await tab(w, room);
  const uid = rid('u');
  const id1 = rid();
  a.send(chatRequest(id1, [userMessage(uid, 'original text')]));
  await a.waitFor(isDone(id1), TURN_MS);
  const [, assistant] = await getMessages(w.url, AGENT, room);
  const u2 = rid('u');
  const id2 = rid();
  a.send(chatRequest(id2, [userMessage(uid, 'edited text'), assistant, userMessage(u2, 'next')]));
  await a.waitFor(isDone(id2), TURN_MS);
  const persisted = await getMessages(w.url, AGENT, room);
  assert.deepEqual(persisted.map((m) => m.id).slice(0, 3), [uid, assistant.id, u2]);
  assert.equal(persisted[0].parts[0].text, 'edited text');
  assert.equal(persisted[0].metadata?.channel, 'web');
  assert.deepEqual(modelTexts(w.model.requests[1]), ['edited text', 'next']);
});

test('client-supplied metadata.channel is not trusted: user messages are stored with channel "web"', async (t) => {
  const w = await workerFor(t);
  const room = 'room-metadata';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [{ ...userMessage(uid, 'hi'), metadata: { channel: 'telegram', turnMetadata: { x: 1 }, mine: true } }]));
  await a.waitFor(isDone(id), TURN_MS);
  const [user] = await getMessages(w.url, AGENT, room);
  assert.equal(user.metadata.channel, 'web');
  assert.equal(user.metadata.turnMetadata, undefined);
});

test('a socket without _pk still gets a connection of its own', async (t) => {
  const w = await workerFor(t);
  const { default: WebSocket } = await import('ws');
  const url = new URL('/agents/chat-agent/room-no-pk', w.url);
  url.protocol = 'ws:';
  const ws = new WebSocket(url);
  t.after(() => ws.terminate());
  const frames = [];
  await new Promise((resolve, reject) => {
    ws.on('message', (d) => { frames.push(JSON.parse(d.toString())); if (frames.length === 4) resolve(); });
    ws.on('error', reject);
  });
  assert.deepEqual(frames.map((f) => f.type), ['cf_agent_chat_messages', 'cf_agent_identity', 'cf_agent_state', 'cf_agent_mcp_servers']);
  ws.send(JSON.stringify({ type: 'cf_agent_stream_resume_request', probeId: 'p' }));
  await waitUntil(() => frames.length === 5);
  assert.deepEqual(frames[4], { type: 'cf_agent_stream_resume_none', reason: 'idle', probeId: 'p' });
});

test('an error in the middle of the model stream becomes a readable error frame, then a terminal error, and the partial text is kept', async (t) => {
  const w = await workerFor(t);
  const room = 'room-stream-error';
  const a = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  const mark = a.mark();
  a.send(chatRequest(id, [userMessage(uid, 'go [stream-error]')]));
  const done = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'error');
  const mine = responsesOf(a.since(mark), id);
  const error = mine.find((f) => f.error);
  assert.equal(error.done, false);
  assert.match(error.body, /scripted stream failure/);
  assert.ok(mine.indexOf(error) === mine.length - 2, 'the error frame is followed only by the terminal frame');
  const streamed = textOf(a.since(mark), id);
  assert.ok(streamed.length > 0, 'some text streamed before the failure');
  const persisted = await getMessages(w.url, AGENT, room);
  assert.deepEqual(persisted.map((m) => m.role), ['user', 'assistant']);
  assert.equal(persisted[1].parts.find((p) => p.type === 'text').text, streamed);
});

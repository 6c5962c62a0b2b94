// End-to-end on the real runtime: a model stream that breaks off after a few words (the scripted
// model's `[truncate-once]`: two words, then the response ends with no finish and no [DONE], as a
// dropped connection does) is finished in the same answer by a recovery inside the running
// isolate. Raw frames: the cut request ends `recovering`, every tab is told a recovery runs, a
// continuation completes the text, nothing is an error. The stock hooks: one assistant message
// with the whole answer, no error, the chat ready again.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getMessages, userMessage, chatRequest, isDone, textOf } from '../support/harness.mjs';
import { workerFor, tab, rid, responsesOf } from '../support/e2e.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 15000;
const ASK = 'tell me a long story [truncate-once]';
const ANSWER = `You said: ${ASK}`;

test('a cut stream is continued into the same answer: recovering, then the rest, and no error in any tab', async (t) => {
  const w = await workerFor(t);
  const room = 'cut-raw';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const id = rid();
  const uid = rid('u');
  a.send(chatRequest(id, [userMessage(uid, ASK)]));
  const cut = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(cut.outcome, 'recovering');
  assert.deepEqual(cut.messageIds, [uid]);
  assert.equal(textOf(a.frames, id), 'You said: ', 'two words streamed before the cut');

  const over = (f) => f.type === 'cf_agent_chat_recovering' && f.recovering === false;
  for (const c of [a, b]) {
    await c.waitFor(over, TURN_MS);
    const announced = c.frames.filter((f) => f.type === 'cf_agent_chat_recovering');
    assert.deepEqual(announced.map((f) => f.recovering), [true, false]);
    assert.deepEqual(c.frames.filter((f) => f.type === 'cf_agent_use_chat_response' && f.error), [], 'no error');
  }
  const continuation = a.frames.find((f) => f.type === 'cf_agent_use_chat_response' && f.id !== id && f.done);
  assert.equal(continuation.outcome, 'completed');
  assert.equal(continuation.continuation, true);
  assert.equal(textOf(a.frames, id) + textOf(a.frames, continuation.id), ANSWER);

  const stored = await getMessages(w.url, AGENT, room);
  assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant']);
  assert.equal(stored[1].parts.filter((p) => p.type === 'text').map((p) => p.text).join(''), ANSWER);
  assert.equal(w.model.requests.length, 2, 'the cut call and one continuation');
});

for (const hook of ['think', 'agents']) describe(`with ${hook === 'think' ? '@cloudflare/think/react' : 'agents/chat/react'}`, () => {
  test('the person sees one answer, finished, and no error', async (t) => {
    const w = await workerFor(t);
    const room = `cut-${hook}`;
    const a = await mountAgentChat({ url: w.url, name: room, hook });
    t.after(() => a.unmount());
    await a.waitFor(() => a.frames.some((f) => f.type === 'cf_agent_stream_resume_none'));
    await a.chat.sendMessage({ text: ASK });
    const text = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    await a.waitFor((c) => c.status === 'ready' && c.messages.length === 2 && text(c.messages[1]) === ANSWER, TURN_MS);
    await a.settled();
    assert.equal(a.chat.error, undefined);
    assert.deepEqual(a.chat.messages.map((m) => m.role), ['user', 'assistant'], 'one assistant message');
    const stored = await getMessages(w.url, AGENT, room);
    assert.deepEqual(a.chat.messages.map((m) => m.id), stored.map((m) => m.id));
    assert.deepEqual(a.errors, []);
  });
});

test('a tab joining the recovery of a cut continuation shows the stored answer once, at every moment', async (t) => {
  const w = await workerFor(t);
  const room = 'cut-continuation-join';
  const a = await tab(w, room);
  const id = rid();
  const full = Array.from({ length: 120 }, (_, i) => `w${i + 1}`).join(' ');
  // Cut after two words inside the isolate; its recovery (a continuation) is then cut by a
  // restart mid-text, so the stream a joining tab is offered is that continuation.
  a.send(chatRequest(id, [userMessage(rid('u'), 'a long story [truncate-once] [tokens:120] [delay:25]')]));
  assert.equal((await a.waitFor(isDone(id), TURN_MS)).outcome, 'recovering');
  const continuation = await a.waitFor((f) => f.type === 'cf_agent_use_chat_response' && f.id !== id && f.continuation && !f.done, TURN_MS);
  await a.waitFor(() => responsesOf(a.frames, continuation.id).filter((f) => String(f.body).includes('text-delta')).length >= 20, TURN_MS);
  await w.restart();

  const c = await mountAgentChat({ url: w.url, name: room, hook: 'agents' });
  t.after(() => c.unmount());
  const text = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  const seen = [];
  const look = () => {
    const shown = c.chat.messages.filter((m) => m.role === 'assistant').map(text);
    seen.push(shown);
    return shown.length === 1 && shown[0] === full && c.chat.status === 'ready';
  };
  await c.waitFor(look, TURN_MS);
  await c.settled();
  look();
  for (const shown of seen) {
    assert.ok(shown.length <= 1, `one assistant message: ${JSON.stringify(shown)}`);
    for (const s of shown) assert.ok(full.startsWith(s), `the tab showed text the answer does not have: ${JSON.stringify(s.slice(-120))}`);
  }
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(text(stored.at(-1)), full);
  assert.deepEqual(c.errors, []);
});

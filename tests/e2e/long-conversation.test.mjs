// End-to-end on the real runtime: long conversations. The stock client configured with the
// README's `prepareSendMessagesRequest` (the demo's `sendOnlyTheTail`) sends only its newest
// message and the server keeps the history (submit and regenerate, under both hooks); a
// conversation grown through tail requests keeps every message across a restart while each model
// request stays within MODEL_CONTEXT_BYTES; and a provider that refuses an over-long request
// (400 context_length_exceeded) gets it again with less context, so the turn still completes.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getMessages, isDone, userMessage, sendAndWait } from '../support/harness.mjs';
import { workerFor, tab, rid, waitUntil } from '../support/e2e.mjs';
import { startModelServer } from '../support/model-server.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';
import { sendOnlyTheTail } from '../../demo/src/tailRequest.js';

const TURN_MS = 15000;

const AGENT = 'ChatAgent';

/** The newest of `messages` whose JSON (a comma each) fits in a transcript frame's 256 KiB. */
const newestThatFit = (messages) => {
  let used = 0;
  let k = messages.length;
  while (k > 0 && used + Buffer.byteLength(JSON.stringify(messages[k - 1])) + 1 <= 256 * 1024) {
    used += Buffer.byteLength(JSON.stringify(messages[k - 1])) + 1;
    k -= 1;
  }
  return messages.slice(k);
};
const requestsSent = (tabHandle) => tabHandle.sent.filter((f) => f.type === 'cf_agent_use_chat_request');
const messagesOf = (frame) => JSON.parse(frame.init.body).messages;
const lastText = (chat) => {
  const last = chat.messages.at(-1);
  return last?.role === 'assistant' ? last.parts.filter((p) => p.type === 'text').map((p) => p.text).join('') : '';
};

for (const hook of ['think', 'agents']) describe(`tail requests with ${hook === 'think' ? '@cloudflare/think/react' : 'agents/chat/react'}`, () => {
  test('each request carries only the newest message; the server keeps the whole history; regenerate replaces the last answer', async (t) => {
    const w = await workerFor(t);
    const room = `long-tail-${hook}`;
    const a = await mountAgentChat({ url: w.url, name: room, hook, chatOptions: { prepareSendMessagesRequest: sendOnlyTheTail } });
    t.after(() => a.unmount());
    await a.waitFor(() => a.frames.some((f) => f.type === 'cf_agent_stream_resume_none'));

    for (const text of ['first question', 'second question', 'third question']) {
      await a.chat.sendMessage({ text });
      await a.waitFor((c) => c.status === 'ready' && lastText(c) === `You said: ${text}`);
    }
    const sent = requestsSent(a);
    assert.equal(sent.length, 3);
    for (const frame of sent) assert.equal(messagesOf(frame).length, 1, 'only the new message is sent');
    assert.deepEqual(messagesOf(sent[2])[0].parts, [{ type: 'text', text: 'third question' }]);
    const stored = await getMessages(w.url, AGENT, room);
    assert.equal(stored.length, 6, 'the history is kept by the server');
    assert.deepEqual(a.chat.messages.map((m) => m.id), stored.map((m) => m.id));

    await a.chat.regenerate();
    await a.waitFor((c) => c.status === 'ready' && c.messages.length === 6 && lastText(c) === 'You said: third question'
      && c.messages.at(-1).id !== stored.at(-1).id);
    const regenerate = requestsSent(a).at(-1);
    assert.equal(JSON.parse(regenerate.init.body).trigger, 'regenerate-message');
    assert.deepEqual(messagesOf(regenerate).map((m) => m.id), [stored[4].id], 'only the anchor is sent');
    const after = await getMessages(w.url, AGENT, room);
    assert.deepEqual(after.slice(0, 5).map((m) => m.id), stored.slice(0, 5).map((m) => m.id), 'nothing before the anchor is touched');
    assert.notEqual(after[5].id, stored[5].id, 'the last answer was replaced');
    assert.equal(after.length, 6);
    assert.deepEqual(a.errors, []);
  });
});

test('a conversation grown through tail requests keeps every message across a restart, and every model request stays within MODEL_CONTEXT_BYTES', async (t) => {
  const budget = 40_000;
  // More requests a minute than one connection's default rate: that limit is off here.
  const w = await workerFor(t, { bindings: { MODEL_CONTEXT_BYTES: String(budget), RATE_LIMIT_PER_CONNECTION: '0' } });
  const room = 'long-growth';
  const a = await tab(w, room);
  const turns = 150;
  const filler = 'x'.repeat(600);
  for (let i = 0; i < turns; i++) {
    const { done } = await sendAndWait(a, rid(), [userMessage(rid('u'), `q${i} ${filler}`)]);
    assert.equal(done.outcome, 'completed', `turn ${i}`);
  }
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.length, 2 * turns);
  const storedBytes = JSON.stringify(stored).length;
  assert.ok(storedBytes > 4 * budget, `the history (${storedBytes} B) is far beyond one request's budget`);

  const sizes = w.model.requests.map((body) => JSON.stringify(body.messages).length);
  const largest = Math.max(...sizes);
  t.diagnostic(`history ${storedBytes} B over ${stored.length} messages; largest model request ${largest} B of messages`);
  assert.ok(largest < budget * 1.5, `every model request stays near the budget: ${largest}`);
  const last = w.model.requests.at(-1).messages;
  assert.equal(last[0].role, 'system');
  assert.match(last[1].content, /earlier messages of this conversation are not shown/);
  assert.match(last.at(-1).content, new RegExp(`^q${turns - 1} `), 'the newest question is always sent');

  await w.restart();
  const b = await tab(w, room);
  const { done } = await sendAndWait(b, rid(), [userMessage(rid('u'), 'still there?')]);
  assert.equal(done.outcome, 'completed');
  const afterRestart = await getMessages(w.url, AGENT, room);
  assert.equal(afterRestart.length, 2 * turns + 2, 'nothing was lost in the restart');
  assert.deepEqual(afterRestart.slice(0, 2 * turns).map((m) => m.id), stored.map((m) => m.id));
});

test('a request the provider refuses as longer than its context is sent again with less, and the turn completes', async (t) => {
  const model = await startModelServer({ maxContextBytes: 12_000 });
  t.after(() => model.close());
  // No bound of our own: only the provider's refusal narrows the context.
  const w = await workerFor(t, { model, bindings: { MODEL_CONTEXT_BYTES: '0' } });
  const room = 'long-overflow';
  const a = await tab(w, room);
  for (let i = 0; i < 20; i++) {
    const { done } = await sendAndWait(a, rid(), [userMessage(rid('u'), `q${i} ${'y'.repeat(500)}`)]);
    assert.equal(done.outcome, 'completed', `turn ${i}: ${JSON.stringify(done)}`);
  }
  assert.ok(model.refusedForContext.length > 0, 'the conversation outgrew the provider');
  const frames = a.frames.filter((f) => f.type === 'cf_agent_use_chat_response' && f.error);
  assert.deepEqual(frames, [], 'no turn showed an error');
  await waitUntil(async () => (await getMessages(w.url, AGENT, room)).length === 40, { what: 'every answer stored' });
});

test('a conversation grown past 2,000 messages and 3 MB through tail requests keeps answering within the default context policy, sends bounded transcript frames, and survives a restart', async (t) => {
  // More requests a minute than one connection's default rate: that limit is off here.
  const w = await workerFor(t, { bindings: { RATE_LIMIT_PER_CONNECTION: '0' } });
  const room = 'long-3mb';
  const a = await tab(w, room);
  // A second tab gets every turn's end as a transcript (the requester, whose list matches the
  // store, gets only the messages it holds in another form).
  const watcher = await tab(w, room);
  // Each tail request carries the nine user messages the server lacks (~16 KB): ten messages a turn.
  const requests = 205;
  const filler = 'z'.repeat(1_700);
  let id;
  for (let i = 0; i < requests; i++) {
    const batch = Array.from({ length: 9 }, (_, j) => userMessage(rid('u'), `q${i}.${j} ${filler}`));
    id = rid();
    const { done } = await sendAndWait(a, id, batch);
    assert.equal(done.outcome, 'completed', `request ${i}`);
  }
  await watcher.waitFor(isDone(id), TURN_MS);
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.length, 10 * requests);
  const storedBytes = JSON.stringify(stored).length;
  assert.ok(stored.length > 2_000 && storedBytes > 3_000_000, `history ${stored.length} messages, ${storedBytes} B`);

  const sizes = w.model.requests.map((body) => JSON.stringify(body.messages).length);
  const largest = Math.max(...sizes);
  t.diagnostic(`history ${storedBytes} B over ${stored.length} messages; largest model request ${largest} B of messages`);
  assert.ok(largest < 400_000 * 1.5, `every model request stays near the default budget: ${largest}`);
  const last = w.model.requests.at(-1).messages;
  assert.match(last[1].content, /earlier messages of this conversation are not shown/);
  assert.match(last.at(-1).content, new RegExp(`^q${requests - 1}\\.8 `), 'the newest question is always sent');

  assert.deepEqual(a.frames.filter((f) => f.type === 'cf_agent_chat_messages').length, 1,
    'the requester got the transcript once, on connect');
  const updates = a.frames.filter((f) => f.type === 'cf_agent_message_updated');
  assert.equal(updates.length, 10 * requests - 1, 'each turn: its nine messages and the answer before them');
  assert.ok(updates.every((f) => JSON.stringify(f).length < 4_096), 'each a message, not the history');
  const transcriptFrames = watcher.frames.filter((f) => f.type === 'cf_agent_chat_messages');
  const biggest = Math.max(...transcriptFrames.map((f) => JSON.stringify(f).length));
  assert.ok(biggest < 1 << 20, `no transcript frame reaches 1 MiB: ${biggest}`);
  // Exactly the newest messages whose JSON (a comma each) fits in 256 KiB: the place where the
  // frame's older part starts is remembered and moved between frames, never off by a message.
  const idsThatFit = (messages) => newestThatFit(messages).map((m) => m.id);
  assert.deepEqual(transcriptFrames.at(-1).messages.map((m) => m.id), idsThatFit(stored),
    'the last turn-end frame holds the newest messages that fit');

  await w.restart();
  const b = await tab(w, room);
  const snapshot = b.frames.filter((f) => f.type === 'cf_agent_chat_messages').at(-1);
  assert.ok(JSON.stringify(snapshot).length < 1 << 20, 'the connect snapshot stays under 1 MiB');
  assert.deepEqual(snapshot.messages.map((m) => m.id), stored.slice(-snapshot.messages.length).map((m) => m.id),
    'the connect snapshot is the newest messages, in order');
  assert.deepEqual(snapshot.messages.map((m) => m.id), idsThatFit(stored), 'as many as fit');
  const { done } = await sendAndWait(b, rid(), [userMessage(rid('u'), 'still there?')]);
  assert.equal(done.outcome, 'completed');
  const afterRestart = await getMessages(w.url, AGENT, room);
  assert.equal(afterRestart.length, stored.length + 2, 'nothing was lost in the restart');
  assert.deepEqual(afterRestart.slice(0, stored.length).map((m) => m.id), stored.map((m) => m.id));
});

test('past the transcript frame\'s 256 KiB, every turn-end frame holds exactly the newest messages that fit, word for word, in text of every script', async (t) => {
  const w = await workerFor(t, { bindings: { RATE_LIMIT_PER_CONNECTION: '0' } });
  const room = 'frame-at-capacity';
  const a = await tab(w, room);
  // The tab that gets each turn's end as a transcript (the requester gets message updates).
  const watcher = await tab(w, room);
  // Two-, three- and four-byte characters (a surrogate pair in JS) of differing lengths, so a frame
  // whose older part is cut a few messages later than the last one is measured in the right units.
  const filler = (i) => `é${'ß'.repeat(200 + (i % 7) * 31)}中${'文'.repeat(150 + (i % 5) * 17)}🙂${'😀'.repeat(90 + (i % 3) * 13)}`;
  let n = 0;
  let atCapacity = 0;
  for (let turn = 0; atCapacity < 12; turn++) {
    assert.ok(turn < 80, 'the history outgrew one frame');
    const batch = Array.from({ length: turn < 40 && atCapacity === 0 ? 5 : 1 }, () => userMessage(rid('u'), `m${n} ${filler(n++)}`));
    a.cursor = a.frames.length;
    watcher.cursor = watcher.frames.length;
    const id = rid();
    const { done } = await sendAndWait(a, id, batch);
    assert.equal(done.outcome, 'completed', `turn ${turn}`);
    await watcher.waitFor(isDone(id), TURN_MS);
    const stored = await getMessages(w.url, AGENT, room);
    const frame = watcher.frames.filter((f) => f.type === 'cf_agent_chat_messages').at(-1);
    const expected = newestThatFit(stored);
    if (expected.length === stored.length) continue;
    atCapacity += 1;
    assert.deepEqual(frame.messages, expected, `turn ${turn}: the frame is the newest ${expected.length} of ${stored.length} messages`);
  }
});

test('with HISTORY_MAX_MESSAGES the oldest messages are deleted after each turn, the stock client posting its whole transcript does not bring them back, and a restart keeps the cut', async (t) => {
  const w = await workerFor(t, { bindings: { HISTORY_MAX_MESSAGES: '6' } });
  const room = 'history-cap';
  const a = await mountAgentChat({ url: w.url, name: room, hook: 'agents' });
  t.after(() => a.unmount());
  await a.waitFor(() => a.frames.some((f) => f.type === 'cf_agent_stream_resume_none'));

  // The first question is stored in pieces (over 1 MB): its pieces go with it.
  const questions = [`big ${'b'.repeat(1_000_100)}`, 'two', 'three', 'four', 'five'];
  for (const text of questions) {
    await a.chat.sendMessage({ text });
    await a.waitFor((c) => c.status === 'ready' && lastText(c).startsWith(`You said: ${text.slice(0, 20)}`));
  }
  const sent = requestsSent(a);
  assert.ok(messagesOf(sent.at(-1)).length > 6, 'the stock client posts every message it shows');
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.length, 6, 'only the newest six are kept');
  const textOf = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  assert.deepEqual(stored.filter((m) => m.role === 'user').map(textOf), ['three', 'four', 'five']);
  assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
  await a.waitFor((c) => c.messages.length === 6);
  assert.deepEqual(a.chat.messages.map((m) => m.id), stored.map((m) => m.id), 'the tab shows what is stored');

  await w.restart();
  const b = await tab(w, room);
  const { done } = await sendAndWait(b, rid(), [userMessage(rid('u'), 'six')]);
  assert.equal(done.outcome, 'completed');
  const after = await getMessages(w.url, AGENT, room);
  assert.equal(after.length, 6);
  assert.deepEqual(after.slice(0, 4).map((m) => m.id), stored.slice(2).map((m) => m.id), 'the cut moved on by one exchange');
  assert.deepEqual(a.errors, []);
});

/** `n` exchanges from tab `c` through tail requests (questions `q0`…); the stored messages after them. */
async function exchangesThroughTail(w, c, room, n) {
  for (let i = 0; i < n; i++) {
    const { done } = await sendAndWait(c, rid(), [userMessage(`q${i}`, `question ${i}`)]);
    assert.equal(done.outcome, 'completed');
  }
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.length, 2 * n);
  return stored;
}

test('a tab posting its whole transcript past the window: nothing is stored twice, and an older question it edited is updated by id', async (t) => {
  const w = await workerFor(t);
  const room = 'whole-transcript';
  const c = await tab(w, room);
  // 24 exchanges through tail requests: 48 messages, more than the agent keeps in memory.
  const stored = await exchangesThroughTail(w, c, room, 24);
  // The tab posts every message it shows, the first question edited, and a new one.
  const posted = stored.map((m) => (m.id === 'q0' ? { ...m, parts: [{ type: 'text', text: 'question 0, edited' }] } : m));
  const { done } = await sendAndWait(c, rid(), [...posted, userMessage('q24', 'question 24')]);
  assert.equal(done.outcome, 'completed');
  const after = await getMessages(w.url, AGENT, room);
  assert.equal(after.length, 50, 'the posted messages are not stored again');
  assert.deepEqual(after.slice(0, 48).map((m) => m.id), stored.map((m) => m.id));
  const textOf = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  assert.equal(textOf(after[0]), 'question 0, edited', 'the edited question, older than the window, is updated');
  assert.equal(textOf(after[2]), 'question 1');
});

test('a tab posting its whole transcript past the window gets its messages as updates with its turn, not the transcript, unless an old answer it posts is not the stored one', async (t) => {
  const w = await workerFor(t);
  const room = 'whole-transcript-updates';
  const c = await tab(w, room);
  // 40 exchanges through tail requests: 80 messages, more than the agent keeps in memory (32–64).
  const stored = await exchangesThroughTail(w, c, room, 40);
  const listFrames = (frames) => frames.filter((f) => f.type === 'cf_agent_chat_messages' || f.type === 'cf_agent_message_updated');

  // As the stock client unconfigured: every message it shows, then the new one.
  let mark = c.mark();
  let id = rid();
  await sendAndWait(c, id, [...stored, userMessage('q40', 'question 40')]);
  let frames = listFrames(c.since(mark));
  assert.deepEqual(frames.map((f) => f.type), ['cf_agent_message_updated', 'cf_agent_message_updated'], 'the previous answer and its message as stored, no transcript');
  assert.deepEqual(frames.map((f) => f.message.id), [stored.at(-1).id, 'q40']);

  // The oldest answer posted under another role: the tab's list is not the store's.
  const now = await getMessages(w.url, AGENT, room);
  const forged = now.map((m, i) => (i === 1 ? { ...m, role: 'system' } : m));
  mark = c.mark();
  id = rid();
  await sendAndWait(c, id, [...forged, userMessage('q41', 'question 41')]);
  frames = listFrames(c.since(mark));
  const transcripts = frames.filter((f) => f.type === 'cf_agent_chat_messages');
  assert.equal(transcripts.length, 1, 'the transcript at the turn end');
  assert.equal(transcripts[0].messages[1].role, 'assistant', 'as stored');
});

// The input gate end to end, on the test build (DEBUG_MEMORY=1 serves the agent's wasm linear
// memory, whose size never shrinks): inputs of tiny JSON values under their byte limits — a 1.9 MB
// state frame of ~950k zeros, eight 240 KB `setStateField` calls of zeros — are refused by their
// value budgets (`gate::STATE`, `gate::CALL`) before they are built; get-messages reads a message
// split over stored pieces back and stays bounded after a 12 MB history; a 30 MiB WebSocket message
// is refused by the bridge class before it is copied into wasm. Each time the socket stays open,
// the next turn is answered and the agent's memory stays within a few MiB.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, userMessage, getMessages, isDone } from '../support/harness.mjs';
import { tab, rid } from '../support/e2e.mjs';
import { memoryWorker, warmedTab, wasmMiB, turn } from '../support/memory.mjs';

const MiB = 1024 * 1024;
const TURN_MS = 30000;

/** `[0,0,…]` of about `bytes` bytes: the most values per byte JSON allows. */
const zeros = (bytes) => `[${'0,'.repeat(Math.floor(bytes / 2) - 1)}0]`;

/** The agent answers the next turn on `client`, whose socket stayed open. */
async function stillAnswers(client) {
  assert.equal(client.ws.readyState, 1, 'the socket stays open');
  assert.equal((await turn(client, '[tokens:5] still fine')).outcome, 'completed');
}

/** Asserts the agent's wasm memory grew by at most `bound` MiB since `before`. */
async function grewAtMost(t, w, room, before, bound) {
  const after = await wasmMiB(w, room);
  t.diagnostic(`wasm linear memory ${before.toFixed(1)} → ${after.toFixed(1)} MiB`);
  assert.ok(after - before <= bound, `memory grew by ${(after - before).toFixed(1)} MiB (bound ${bound})`);
}

test('a 1.9 MB state frame of 950k zeros is refused before it is built; memory stays within the state budget', async (t) => {
  const { w, room, client, before } = await warmedTab(t, 'hostile-state-values');
  const frame = `{"type":"cf_agent_state","state":{"zeros":${zeros(1.9e6)}}}`;
  assert.ok(frame.length < 1_995_904, 'under the state frame limit');
  client.cursor = client.frames.length;
  client.ws.send(frame);
  const refused = await client.waitFor('cf_agent_state_error', TURN_MS);
  assert.match(refused.error, /state: too many JSON values \(limit 50000\)/);
  await stillAnswers(client);
  const other = await tab(w, room);
  const state = other.frames.find((f) => f.type === 'cf_agent_state');
  assert.deepEqual(state.state, {}, 'nothing of it is kept');
  await grewAtMost(t, w, room, before, 8);
});

test('eight setStateField calls of 240 KB of zeros are refused on their ids; memory stays within the call budget', async (t) => {
  const { w, room, client, before } = await warmedTab(t, 'hostile-call-values');
  for (let i = 0; i < 8; i++) {
    const id = `set-${i}`;
    client.cursor = client.frames.length;
    client.ws.send(`{"type":"rpc","id":"${id}","method":"setStateField","args":["k${i}",${zeros(240_000)}]}`);
    const reply = await client.waitFor((f) => f.type === 'rpc' && f.id === id, TURN_MS);
    assert.equal(reply.success, false);
    assert.match(reply.error, /call frame: too many JSON values \(limit 50000\)/);
  }
  client.cursor = client.frames.length;
  client.ws.send('{"type":"rpc","id":"small","method":"setStateField","args":["mood","sunny"]}');
  const reply = await client.waitFor((f) => f.type === 'rpc' && f.id === 'small', TURN_MS);
  assert.deepEqual(reply.result, { mood: 'sunny' }, 'a call within the budget still runs');
  await stillAnswers(client);
  await grewAtMost(t, w, room, before, 8);
});

/** A `data:` URL of `bytes` bytes of base64 (an image the provider is told is a PNG). */
const image = (bytes) => `data:image/png;base64,${Buffer.alloc(Math.floor((bytes * 3) / 4)).toString('base64')}`;

test('get-messages after a message split over pieces and a 12 MB history: the split message is read back, memory does not follow the history', async (t) => {
  const w = await memoryWorker(t, { RATE_LIMIT_PER_CONNECTION: '0' });
  const room = 'split-history';
  const client = await tab(w, room);
  const big = rid('u');
  const message = {
    id: big,
    role: 'user',
    parts: [
      { type: 'text', text: `[tokens:2] ${'x'.repeat(1_000_000)}` },
      ...[0, 1, 2].map(() => ({ type: 'file', mediaType: 'image/png', url: image(900_000) })),
    ],
  };
  const first = rid();
  client.send(chatRequest(first, [message]));
  assert.equal((await client.waitFor(isDone(first), TURN_MS)).outcome, 'completed');
  // Enough turns to push it out of the agent's recent window (32 messages): read back from its pieces.
  for (let i = 0; i < 34; i++) assert.equal((await turn(client, `[tokens:2] small ${i}`)).outcome, 'completed');
  const early = await getMessages(w.url, 'ChatAgent', room);
  const read = early.find((m) => m.id === big);
  assert.ok(read, 'the split message is answered');
  assert.equal(read.parts[0].text.length, message.parts[0].text.length);
  assert.deepEqual(read.parts.slice(1).map((p) => p.url.length), [0, 1, 2].map((i) => message.parts[i + 1].url.length));
  // Tail requests grow the history to about 12 MB.
  for (let i = 0; i < 70; i++) assert.equal((await turn(client, `[tokens:2] ${i} ${'y'.repeat(120_000)}`)).outcome, 'completed');
  const before = await wasmMiB(w, room);
  let stored;
  for (let i = 0; i < 3; i++) stored = await getMessages(w.url, 'ChatAgent', room);
  const bytes = JSON.stringify(stored).length;
  t.diagnostic(`get-messages: ${stored.length} messages, ${(bytes / MiB).toFixed(2)} MiB of JSON`);
  assert.ok(bytes <= 4 * MiB + 130_000, `${bytes} bytes`);
  assert.equal(stored.at(-1).role, 'assistant', 'ending with the last answer');
  await stillAnswers(client);
  await grewAtMost(t, w, room, before, 8);
});

test('a 30 MiB WebSocket message is refused before it reaches wasm: an error frame on its id, the socket open, the next turn fine', async (t) => {
  const { w, room, client, before } = await warmedTab(t, 'hostile-30mib');
  const id = rid();
  const body = JSON.stringify({ messages: [userMessage(rid('u'), 'hi')], trigger: 'submit-message', pad: 'p'.repeat(30 * MiB) });
  const frame = JSON.stringify({ id, init: { method: 'POST', body }, type: 'cf_agent_use_chat_request' });
  client.cursor = client.frames.length;
  client.ws.send(frame);
  const done = await client.waitFor(isDone(id), TURN_MS);
  assert.equal(done.error, true);
  assert.equal(done.body, `frame too large: ${frame.length} bytes (limit 4194304)`);
  // A binary message over the limit is refused the same way (no id to answer on).
  client.cursor = client.frames.length;
  client.ws.send(new Uint8Array(5 * MiB));
  const refused = await client.waitFor('cf_agent_chat_error', TURN_MS);
  assert.match(JSON.stringify(refused), /frame too large: 5242880 bytes/);
  await stillAnswers(client);
  await grewAtMost(t, w, room, before, 2);
});

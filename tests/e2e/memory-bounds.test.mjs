// End-to-end memory bounds on the test build (DEBUG_MEMORY=1 serves the agent's wasm linear memory
// size; a wasm instance's memory never shrinks, so its size is the high-water mark of everything the
// agent ever held). Hostile inputs under the frame limit — 3.9 MiB calls, state frames and frames of
// a type nobody handles, chat requests with 3 MiB custom bodies — are each answered as documented
// while the agent's memory stays within a small bound, the socket stays open and the next turn works.
// get-messages of a long history answers its newest 4 MiB (as the transcript frame answers its
// newest 256 KiB) without the agent's memory growing with the history. Thirty-two chat requests
// queued behind a running turn, each with a 60 KiB custom body, keep their bodies out of the stored
// queue row (one body row each, written once) and each runs with its own body, also after the
// agent is evicted with all of them queued. Inputs of tiny values under their byte limits (a 1.9 MB
// state frame of zeros, eight 240 KB setStateField calls) are refused by their value budgets
// before they are built; get-messages reads a message split over pieces back and stays bounded
// after a 12 MB history; a 30 MiB WebSocket message is refused before it is copied into wasm.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, userMessage, getMessages, isDone, TEST_BUILD_DIR } from '../support/harness.mjs';
import { workerFor, tab, rid, probe, waitUntil, modelTexts } from '../support/e2e.mjs';

const MiB = 1024 * 1024;
const TURN_MS = 30000;

/** `[0,0,…]` of about `bytes` bytes: the most values per byte JSON allows. */
const zeros = (bytes) => `[${'0,'.repeat(Math.floor(bytes / 2) - 1)}0]`;

async function wasmMiB(w, room) {
  const r = await fetch(`${w.url}/agents/chat-agent/${room}/__debug/memory`);
  assert.equal(r.status, 200, 'the test build serves …/__debug/memory with DEBUG_MEMORY=1');
  return (await r.json()).wasmMemoryBytes / MiB;
}

async function turn(client, text) {
  const id = rid();
  client.cursor = client.frames.length;
  client.send(chatRequest(id, [userMessage(rid('u'), text)]));
  return client.waitFor(isDone(id), TURN_MS);
}

/** Every answer to frames sent before it precedes the answer to this probe. */
async function barrier(client) {
  const probeId = probe(client);
  await client.waitFor((f) => f.type === 'cf_agent_stream_resume_none' && f.probeId === probeId, TURN_MS);
}

const memoryWorker = (t, bindings = {}) => workerFor(t, {
  bindings: { DEBUG_MEMORY: '1', ...bindings }, buildDir: TEST_BUILD_DIR, miniflare: { unsafePreventEviction: true },
});

/** A memory worker's tab on `room` after one warm-up turn, and the agent's wasm memory then. */
async function warmedTab(t, room) {
  const w = await memoryWorker(t);
  const client = await tab(w, room);
  assert.equal((await turn(client, '[tokens:5] warm up')).outcome, 'completed');
  return { w, room, client, before: await wasmMiB(w, room) };
}

test('3.9 MiB calls, state frames and unknown frames and 3 MiB custom bodies are refused as documented; memory stays within 32 MiB', async (t) => {
  const { w, room, client, before } = await warmedTab(t, 'hostile-memory');

  for (let i = 0; i < 4; i++) {
    client.cursor = client.frames.length;
    client.ws.send(`{"type":"rpc","id":"call-${i}","method":"echo","args":[${zeros(3.9 * MiB)}]}`);
    const reply = await client.waitFor((f) => f.type === 'rpc' && f.id === `call-${i}`, TURN_MS);
    assert.equal(reply.success, false);
    assert.match(reply.error, /^call frame too large: \d+ bytes \(limit 262144\)/);
  }
  for (let i = 0; i < 4; i++) {
    client.cursor = client.frames.length;
    client.ws.send(`{"type":"cf_agent_state","state":{"junk":${zeros(3.9 * MiB)}}}`);
    const refused = await client.waitFor('cf_agent_state_error', TURN_MS);
    assert.match(refused.error, /^state too large/);
  }
  for (let i = 0; i < 4; i++) {
    client.ws.send(`{"type":"not-a-frame-anyone-reads","junk":${zeros(3.9 * MiB)}}`);
  }
  await barrier(client);
  for (let i = 0; i < 4; i++) {
    const id = rid();
    const body = JSON.stringify({ messages: [userMessage(rid('u'), 'hi')], trigger: 'submit-message', junk: '@@' });
    const frame = JSON.stringify({ id, init: { method: 'POST', body }, type: 'cf_agent_use_chat_request' })
      .replace('\\"@@\\"', zeros(3 * MiB));
    client.cursor = client.frames.length;
    client.ws.send(frame);
    const done = await client.waitFor(isDone(id), TURN_MS);
    assert.equal(done.error, true);
    assert.match(done.body, /^custom body too large: \d+ bytes \(limit 65536\)/);
  }

  assert.equal(client.ws.readyState, 1, 'the socket stays open');
  assert.equal((await turn(client, '[tokens:5] still fine')).outcome, 'completed');
  const after = await wasmMiB(w, room);
  t.diagnostic(`wasm linear memory ${before.toFixed(1)} → ${after.toFixed(1)} MiB`);
  assert.ok(after - before <= 32, `memory grew by ${(after - before).toFixed(1)} MiB (bound 32)`);
});

test('chat requests whose messages carry 3.9 MiB of tiny JSON values are refused on their id before they are built; memory stays within 32 MiB', async (t) => {
  const { w, room, client, before } = await warmedTab(t, 'hostile-messages');
  for (let i = 0; i < 4; i++) {
    const id = rid();
    const message = { id: rid('u'), role: 'user', parts: [{ type: 'text', text: 'hi' }, { type: 'data-junk', data: '@@' }] };
    const body = JSON.stringify({ messages: [message], trigger: 'submit-message' });
    const frame = JSON.stringify({ id, init: { method: 'POST', body }, type: 'cf_agent_use_chat_request' })
      .replace('\\"@@\\"', zeros(3.9 * MiB));
    assert.ok(frame.length > 3.9 * MiB && frame.length < 4 * MiB);
    client.cursor = client.frames.length;
    client.ws.send(frame);
    const done = await client.waitFor(isDone(id), TURN_MS);
    assert.equal(done.error, true);
    assert.equal(done.body, 'chat request body: too many JSON values (limit 300000)');
  }
  assert.equal(client.ws.readyState, 1, 'the socket stays open');
  assert.equal((await turn(client, '[tokens:5] still fine')).outcome, 'completed');
  const stored = await getMessages(w.url, 'ChatAgent', room);
  assert.equal(stored.length, 4, 'only the two normal turns are stored');
  const after = await wasmMiB(w, room);
  t.diagnostic(`wasm linear memory ${before.toFixed(1)} → ${after.toFixed(1)} MiB`);
  assert.ok(after - before <= 32, `memory grew by ${(after - before).toFixed(1)} MiB (bound 32)`);
});

test('get-messages of a 12 MB history answers its newest 4 MiB, in order, without the agent holding the history', async (t) => {
  // A hundred requests in well under a minute: past the default rate of one connection.
  const w = await memoryWorker(t, { RATE_LIMIT_PER_CONNECTION: '0' });
  const room = 'long-history';
  const client = await tab(w, room);
  const sent = [];
  // Tail requests (the newest message only), as a client configured for long histories sends them.
  for (let i = 0; i < 100; i++) {
    const text = `[tokens:2] ${i} ${'x'.repeat(120_000)}`;
    const id = rid();
    const uid = rid('u');
    sent.push(uid);
    client.cursor = client.frames.length;
    client.send(chatRequest(id, [userMessage(uid, text)]));
    const done = await client.waitFor(isDone(id), TURN_MS);
    assert.equal(done.outcome, 'completed');
  }
  const before = await wasmMiB(w, room);
  let stored;
  for (let i = 0; i < 3; i++) stored = await getMessages(w.url, 'ChatAgent', room);
  const after = await wasmMiB(w, room);
  t.diagnostic(`wasm linear memory ${before.toFixed(1)} → ${after.toFixed(1)} MiB over three reads`);
  const bytes = JSON.stringify(stored).length;
  t.diagnostic(`get-messages: ${stored.length} of 200 messages, ${(bytes / MiB).toFixed(2)} MiB of JSON`);
  assert.ok(stored.length > 20 && stored.length < 200, `${stored.length} messages`);
  assert.ok(bytes <= 4 * MiB + 130_000, `${bytes} bytes`);
  const users = stored.filter((m) => m.role === 'user').map((m) => m.id);
  assert.deepEqual(users, sent.slice(-users.length), 'the newest user messages, in order');
  assert.equal(stored.at(-1).role, 'assistant', 'ending with the last answer');
  assert.ok(stored.every((m, i) => i === 0 || m.role !== stored[i - 1].role), 'no message missing in between');
  assert.ok(after - before <= 8, `three reads grew memory by ${(after - before).toFixed(1)} MiB (bound 8)`);
});

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

async function queueRows(w, room) {
  const r = await fetch(`${w.url}/agents/chat-agent/${room}/__debug/queue-rows`);
  assert.equal(r.status, 200, 'the test build serves …/__debug/queue-rows with DEBUG_TOOLS=1');
  return r.json();
}

test('32 queued requests with 60 KiB custom bodies: the queue row keeps no body, and each runs with its own body after an eviction', async (t) => {
  const w = await memoryWorker(t, { DEBUG_TOOLS: '1', RATE_LIMIT_PER_CONNECTION: '0', RATE_LIMIT_PER_AGENT: '0' });
  const room = 'queued-bodies';
  const client = await tab(w, room);
  const first = rid();
  client.send(chatRequest(first, [userMessage(rid('u'), '[tokens:200] [delay:50] the slow one')]));
  await client.waitFor((f) => f.id === first && f.body?.includes('text-delta'), TURN_MS);
  const QUEUED = 32;
  const BLOB = 60 * 1024;
  for (let n = 0; n < QUEUED; n++) {
    const body = { echoBody: true, tag: n, blob: 'x'.repeat(BLOB) };
    client.send(chatRequest(rid(), [userMessage(rid('u'), `[tokens:2] queued ${n}`)], body));
  }
  const rows = await waitUntil(async () => {
    const r = await queueRows(w, room);
    return r.queuedBodies === QUEUED && r;
  }, { timeoutMs: TURN_MS, what: 'every body row stored' });
  t.diagnostic(`queue row ${rows.queueRowBytes} bytes; ${rows.queuedBodies} body rows, ${rows.queuedBodyBytes} bytes`);
  assert.ok(rows.queueRowBytes > 0 && rows.queueRowBytes < 16 * 1024, `the queue row holds no body (${rows.queueRowBytes} bytes)`);
  assert.ok(rows.queuedBodyBytes > QUEUED * BLOB, 'each body is stored in full in its own row');

  // Evicted with every request queued: the restarted agent runs each with its own body.
  const hosts = async () => (await (await fetch(`${w.url}/agents/chat-agent/${room}/__debug/memory`)).json()).hostsCreated;
  const hostsBefore = await hosts();
  const evicted = await fetch(`${w.url}/agents/chat-agent/${room}/__debug/evict`, { method: 'POST' });
  assert.equal(evicted.status, 200);
  // The object is reset a moment after the route answers: a new instance of the agent runs the queue.
  await waitUntil(async () => (await hosts().catch(() => hostsBefore)) > hostsBefore, { timeoutMs: TURN_MS, intervalMs: 50, what: 'a new instance of the agent' });
  await waitUntil(async () => (await tab(w, room).catch(() => null)) ?? false, { timeoutMs: TURN_MS, what: 'the agent back' });
  await waitUntil(
    () => [...Array(QUEUED).keys()].every((n) => w.model.requests.some((r) => modelTexts(r).at(-1) === `[tokens:2] queued ${n}`)),
    { timeoutMs: 4 * TURN_MS, intervalMs: 100, what: 'every queued turn asked the model' },
  );
  for (let n = 0; n < QUEUED; n++) {
    const request = w.model.requests.find((r) => modelTexts(r).at(-1) === `[tokens:2] queued ${n}`);
    const system = modelTexts(request, 'system').join('\n');
    const seen = system.match(/custom body tag=(\d+) bytes=(\d+)/);
    assert.ok(seen, `turn ${n} ran with a custom body (system: ${system.slice(0, 200)})`);
    assert.equal(Number(seen[1]), n, `turn ${n} ran with its own body`);
    assert.ok(Number(seen[2]) > BLOB, `turn ${n} ran with its whole body`);
  }
  const after = await waitUntil(async () => {
    const r = await queueRows(w, room);
    return r.queuedBodies === 0 && r;
  }, { timeoutMs: TURN_MS, what: 'every body row deleted' });
  assert.equal(after.queueRowBytes, 0, 'the queue row is gone');
});

// End-to-end memory bounds on the test build (DEBUG_MEMORY=1 serves the agent's wasm linear memory
// size; a wasm instance's memory never shrinks, so its size is the high-water mark of everything the
// agent ever held). Hostile inputs under the frame limit — 3.9 MiB calls, state frames and frames of
// a type nobody handles, chat requests with 3 MiB custom bodies — are each answered as documented
// while the agent's memory stays within a small bound, the socket stays open and the next turn works.
// get-messages of a long history answers its newest 4 MiB (as the transcript frame answers its
// newest 256 KiB) without the agent's memory growing with the history. Thirty-two chat requests
// queued behind a running turn, each with a 60 KiB custom body, keep their bodies out of the stored
// queue row (one body row each, written once) and each runs with its own body, also after the
// agent is evicted with all of them queued.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, userMessage, getMessages, isDone } from '../support/harness.mjs';
import { tab, rid, probe, waitUntil, modelTexts } from '../support/e2e.mjs';
import { memoryWorker, warmedTab, wasmMiB, turn } from '../support/memory.mjs';

const MiB = 1024 * 1024;
const TURN_MS = 30000;

/** `[0,0,…]` of about `bytes` bytes: the most values per byte JSON allows. */
const zeros = (bytes) => `[${'0,'.repeat(Math.floor(bytes / 2) - 1)}0]`;

/** Every answer to frames sent before it precedes the answer to this probe. */
async function barrier(client) {
  const probeId = probe(client);
  await client.waitFor((f) => f.type === 'cf_agent_stream_resume_none' && f.probeId === probeId, TURN_MS);
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

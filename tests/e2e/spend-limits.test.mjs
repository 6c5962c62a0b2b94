// End-to-end limits on what one client can make an agent do: chat requests per connection and per
// agent in a minute (refused on the request's id, the socket stays open, other tabs go on), and
// sockets per agent (an upgrade past the cap is refused with 429 until one closes).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { connect, chatRequest, userMessage, isDone } from '../support/harness.mjs';
import { workerFor, tab, rid } from '../support/e2e.mjs';

const TURN_MS = 15000;

/** The HTTP answer to a WebSocket upgrade the agent refuses: {status, body}. */
function refusedUpgrade(url, room) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/agents/chat-agent/${room}?_pk=${rid()}`);
    ws.on('open', () => { ws.close(); reject(new Error('the upgrade was accepted')); });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    ws.on('error', () => {});
  });
}

async function ask(client) {
  const id = rid();
  client.cursor = client.frames.length;
  client.send(chatRequest(id, [userMessage(rid('u'), '[tokens:2] hi')]));
  return client.waitFor(isDone(id), TURN_MS);
}

test('a tab past RATE_LIMIT_PER_CONNECTION is refused on the request id; the socket and other tabs go on', async (t) => {
  const w = await workerFor(t, { bindings: { RATE_LIMIT_PER_CONNECTION: '3' } });
  const a = await tab(w, 'rate');
  const b = await tab(w, 'rate');
  for (let i = 0; i < 3; i++) assert.equal((await ask(a)).outcome, 'completed');
  const refused = await ask(a);
  assert.equal(refused.error, true);
  assert.match(refused.body, /^too many requests from this connection \(limit 3 a minute\); try again in \d+ s$/);
  assert.equal(a.ws.readyState, 1, 'the socket stays open');
  assert.equal((await ask(b)).outcome, 'completed', 'another tab is not limited by this one');
});

test('an agent past RATE_LIMIT_PER_AGENT refuses every tab', async (t) => {
  const w = await workerFor(t, { bindings: { RATE_LIMIT_PER_AGENT: '2' } });
  const a = await tab(w, 'agent-rate');
  const b = await tab(w, 'agent-rate');
  assert.equal((await ask(a)).outcome, 'completed');
  assert.equal((await ask(b)).outcome, 'completed');
  const refused = await ask(b);
  assert.equal(refused.error, true);
  assert.match(refused.body, /^too many requests to this agent \(limit 2 a minute\)/);
  const other = await tab(w, 'another-agent');
  assert.equal((await ask(other)).outcome, 'completed', 'the limit is per agent');
});

test('sockets past MAX_CONNECTIONS are refused with 429 until one closes', async (t) => {
  const w = await workerFor(t, { bindings: { MAX_CONNECTIONS: '2' } });
  const a = await tab(w, 'crowded');
  await tab(w, 'crowded');
  const refused = await refusedUpgrade(w.url, 'crowded');
  assert.equal(refused.status, 429);
  assert.match(refused.body, /too many connections to this agent \(limit 2\)/);
  const elsewhere = await tab(w, 'quiet');
  assert.equal(elsewhere.ws.readyState, 1, 'the cap is per agent');
  a.ws.close();
  let third;
  for (let i = 0; i < 50 && !third; i++) {
    third = await connect(w.url, 'ChatAgent', 'crowded').catch(() => null);
    if (!third) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(third, 'a socket is accepted again once one closed');
  assert.equal((await ask(third)).outcome, 'completed');
});

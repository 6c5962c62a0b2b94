// End-to-end limits on what one client can make an agent do: chat requests per connection and per
// agent in a minute (refused on the request's id, the socket stays open, other tabs go on), and
// sockets per agent (an upgrade past the cap is refused with 429 until one closes) and per client
// address (one client cannot hold them all); with a Rate Limiting binding, requests per client
// credential or address at the router. The agent's
// rate also counts what reaches it without a tab: the public submit route (429 past it), a
// parent's chat() and submissions over RPC (the parent's tool reads the refusal). One turn's
// calls to child agents are capped in flight: a step delegating past MAX_CHILD_CALLS_PER_TURN
// gets tool errors for the calls over the cap, whose children never run a turn, and a cancelled
// turn's calls give their slots back.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, chatRequest, userMessage, isDone, getMessages } from '../support/harness.mjs';
import WebSocket from 'ws';
import { workerFor, tab, rid, contentText, waitUntil, refusedUpgrade } from '../support/e2e.mjs';

const TURN_MS = 15000;

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

/** Open sockets the agent holds (the test build's `…/__debug/memory`, with DEBUG_MEMORY=1). */
async function socketsOf(w, room) {
  const res = await fetch(`${w.url}/agents/chat-agent/${room}/__debug/memory`);
  return (await res.json()).sockets;
}

test('closing a tab and opening another does not reset RATE_LIMIT_PER_CONNECTION; a tab open beside it still counts apart', async (t) => {
  const w = await workerFor(t, { bindings: { RATE_LIMIT_PER_CONNECTION: '3', DEBUG_MEMORY: '1' } });
  const room = rid('reconnect');
  const a = await tab(w, room);
  const b = await tab(w, room);
  for (let i = 0; i < 3; i++) assert.equal((await ask(a)).outcome, 'completed');
  assert.equal((await ask(b)).outcome, 'completed', 'a tab open beside it is not limited by it');
  await a.close();
  await waitUntil(async () => (await socketsOf(w, room)) === 1, { timeoutMs: TURN_MS, what: 'the close handled' });
  const again = await tab(w, room);
  const refused = await ask(again);
  assert.equal(refused.error, true, 'the new socket of the same client starts from the closed one\'s window');
  assert.match(refused.body, /^too many requests from this connection \(limit 3 a minute\); try again in \d+ s$/);
  assert.equal(again.ws.readyState, 1, 'the socket stays open');
  assert.equal((await ask(b)).outcome, 'completed', 'the tab open beside it still counts on its own');
  await again.close();
  await b.close();
});

test('an eviction resets neither a client\'s RATE_LIMIT_PER_CONNECTION window nor the agent\'s RATE_LIMIT_PER_AGENT', async (t) => {
  const w = await workerFor(t, {
    bindings: { RATE_LIMIT_PER_CONNECTION: '3', RATE_LIMIT_PER_AGENT: '4', DEBUG_TOOLS: '1', DEBUG_MEMORY: '1' },
  });
  const room = rid('evicted');
  const from = (address) => ({ headers: { 'cf-connecting-ip': address } });
  const a = await tab(w, room, from('203.0.113.7'));
  for (let i = 0; i < 3; i++) assert.equal((await ask(a)).outcome, 'completed');
  const hosts = async () => (await (await fetch(`${w.url}/agents/chat-agent/${room}/__debug/memory`)).json()).hostsCreated;
  const hostsBefore = await hosts();
  const evicted = await fetch(`${w.url}/agents/chat-agent/${room}/__debug/evict`, { method: 'POST' });
  assert.equal(evicted.status, 200);
  await waitUntil(async () => (await hosts().catch(() => hostsBefore)) > hostsBefore, { timeoutMs: TURN_MS, intervalMs: 50, what: 'a new instance of the agent' });
  // The same client, on whichever socket it now has, is still at its limit.
  const same = a.isOpen ? a : await tab(w, room, from('203.0.113.7'));
  const refused = await ask(same);
  assert.equal(refused.error, true, 'the eviction did not reset the client\'s window');
  assert.match(refused.body, /^too many requests from this connection \(limit 3 a minute\)/);
  // Another client has its own window, but the agent's is still counted: one more, then refused.
  const other = await tab(w, room, from('198.51.100.2'));
  assert.equal((await ask(other)).outcome, 'completed');
  const full = await ask(other);
  assert.equal(full.error, true, 'the eviction did not reset the agent\'s window');
  assert.match(full.body, /^too many requests to this agent \(limit 4 a minute\)/);
  await other.close();
  if (same.isOpen) await same.close();
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

/** A socket to `room` from the client at `address` (its `CF-Connecting-IP`): {status, ws} once
 * accepted (left open) or refused. */
function socketFrom(url, room, address) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/agents/chat-agent/${room}?_pk=${rid()}`, { headers: { 'cf-connecting-ip': address } });
    ws.on('open', () => resolve({ status: 101, ws }));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    ws.on('error', () => {});
  });
}

test('one client cannot hold all of an agent\'s sockets: past its share (3 of 4) it is refused, another client still gets in', async (t) => {
  const w = await workerFor(t, { bindings: { MAX_CONNECTIONS: '4' } });
  const room = rid('shared');
  const held = [];
  for (let i = 0; i < 3; i++) {
    const opened = await socketFrom(w.url, room, '203.0.113.7');
    assert.equal(opened.status, 101, `socket ${i + 1}: ${opened.body}`);
    held.push(opened.ws);
  }
  t.after(() => held.forEach((ws) => ws.close()));
  const refused = await socketFrom(w.url, room, '203.0.113.7');
  assert.equal(refused.status, 429);
  assert.match(refused.body, /too many connections from one client to this agent \(limit 3\)/);
  const other = await socketFrom(w.url, room, '198.51.100.2');
  assert.equal(other.status, 101, 'another client gets the last socket');
  other.ws.close();
});

test('with a Rate Limiting binding in RATE_LIMIT_BINDING, the router counts each client by its credential or address: a new socket or name does not reset it', async (t) => {
  const w = await workerFor(t, {
    bindings: { RATE_LIMIT_BINDING: 'LIMITER' },
    miniflare: { ratelimits: { LIMITER: { namespace_id: '1001', simple: { limit: 3, period: 60 } } } },
  });
  const read = (address) => w.fetch(`/agents/chat-agent/${rid('rl')}/get-messages`, { headers: { 'cf-connecting-ip': address } });
  for (let i = 0; i < 3; i++) assert.equal((await read('203.0.113.9')).status, 200, `request ${i + 1}`);
  const limited = await read('203.0.113.9');
  assert.equal(limited.status, 429);
  assert.match(await limited.text(), /too many requests: rate limited \(RATE_LIMIT_BINDING\)/);
  const socket = await socketFrom(w.url, rid('rl'), '203.0.113.9');
  assert.equal(socket.status, 429, 'a socket to another agent from the same client is counted too');
  assert.equal((await read('198.51.100.4')).status, 200, 'another client is counted apart');
});

// ---- what reaches an agent without a tab, and a turn's calls to child agents ------------------

const partsOf = (messages, type) => messages.flatMap((m) => m.parts).filter((p) => p.type === type);

/**
 * A coordinator turn whose model calls `tool` once per entry of `calls`, in one step. The
 * directives inside the calls' texts are sent as `\u005b…` so that only the child, not the
 * coordinator's model, reads them.
 */
const fanOutText = (tool, calls) => `go [tool-each:${tool}:${JSON.stringify(calls).replace(/\[(?=[a-z])/g, '\\u005b')}]`;

async function fanOut(w, room, tool, calls) {
  const c = await tab(w, room, undefined, 'Coordinator');
  const id = rid();
  c.send(chatRequest(id, [userMessage(rid('u'), fanOutText(tool, calls))]));
  const done = await c.waitFor(isDone(id), 30000);
  await c.close();
  return { done, parts: partsOf(await getMessages(w.url, 'Coordinator', room), `tool-${tool}`) };
}

const submitRoute = (w, room, text) => w.fetch(`/agents/chat-agent/${room}/submit`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ text }),
});

test('the public submit route counts toward RATE_LIMIT_PER_AGENT and is answered 429 past it', async (t) => {
  const w = await workerFor(t, { bindings: { RATE_LIMIT_PER_AGENT: '2' } });
  const a = await tab(w, 'routed');
  assert.equal((await ask(a)).outcome, 'completed');
  assert.equal((await submitRoute(w, 'routed', '[tokens:2] from a route')).status, 202);
  const refused = await submitRoute(w, 'routed', 'one too many');
  assert.equal(refused.status, 429);
  assert.match(await refused.text(), /too many requests to this agent \(limit 2 a minute\)/);
  const stored = await getMessages(w.url, 'ChatAgent', 'routed');
  assert.ok(!stored.some((m) => m.parts.some((p) => p.text === 'one too many')), 'nothing of it is stored');
  const after = await ask(a);
  assert.equal(after.error, true, 'the route used the budget the tabs share');
});

test("a parent's chat() and submissions over RPC count toward the child's RATE_LIMIT_PER_AGENT", async (t) => {
  const w = await workerFor(t, { bindings: { RATE_LIMIT_PER_AGENT: '2' } });
  const delegated = await fanOut(w, 'rate-parent', 'delegate', [1, 2, 3].map((n) => ({ agent: 'rate-kid', task: `[tokens:2] task ${n}` })));
  assert.equal(delegated.done.outcome, 'completed');
  assert.deepEqual(delegated.parts.map((p) => p.state).sort(), ['output-available', 'output-available', 'output-error']);
  const refused = delegated.parts.find((p) => p.state === 'output-error');
  assert.match(refused.errorText, /^agent 'rate-kid' failed: too many requests to this agent \(limit 2 a minute\); try again in \d+ s$/);
  const kid = await getMessages(w.url, 'ChatAgent', 'rate-kid');
  assert.equal(kid.filter((m) => m.role === 'user').length, 2, 'the refused call stored nothing in the child');

  const submitted = await fanOut(w, 'rate-submitter', 'submit_to', [1, 2, 3].map((n) => ({ agent: 'rate-kid-2', text: `[tokens:2] note ${n}` })));
  assert.equal(submitted.done.outcome, 'completed');
  const states = submitted.parts.map((p) => p.state).sort();
  assert.deepEqual(states, ['output-available', 'output-available', 'output-error']);
  assert.match(submitted.parts.find((p) => p.state === 'output-error').errorText, /^submitting to 'rate-kid-2' failed: .*too many requests to this agent \(limit 2 a minute\)/);
});

test('a step delegating past MAX_CHILD_CALLS_PER_TURN: the calls over the cap are tool errors, their children never run, the turn ends normally', async (t) => {
  const w = await workerFor(t, { bindings: { MAX_CHILD_CALLS_PER_TURN: '2' } });
  // Each child answers slowly, so the first two are still running when the rest are made.
  const kids = [1, 2, 3, 4, 5].map((n) => `fan-kid-${n}`);
  const calls = kids.map((agent) => ({ agent, task: `[delay:400] [tokens:4] for ${agent}` }));
  const first = await fanOut(w, 'fan-parent', 'delegate', calls);
  assert.equal(first.done.outcome, 'completed', 'the turn ended normally');
  assert.equal(first.parts.length, 5);
  const ran = first.parts.filter((p) => p.state === 'output-available');
  const capped = first.parts.filter((p) => p.state === 'output-error');
  assert.equal(ran.length, 2, JSON.stringify(first.parts.map((p) => [p.input.agent, p.state, p.errorText])));
  assert.equal(capped.length, 3);
  for (const part of capped) {
    assert.match(part.errorText, /^delegating to 'fan-kid-\d' failed: too many child agent calls at once in this turn: 2 running \(limit 2, MAX_CHILD_CALLS_PER_TURN\)/);
    assert.deepEqual(await getMessages(w.url, 'ChatAgent', part.input.agent), [], `${part.input.agent} never ran a turn`);
    const asked = w.model.requests.some((r) => r.messages.some((m) => m.role === 'user' && contentText(m.content) === `[delay:400] [tokens:4] for ${part.input.agent}`));
    assert.ok(!asked, `the model was never asked for ${part.input.agent}`);
  }
  for (const part of ran) {
    assert.equal(part.output.text, 'w1 w2 w3 w4');
    assert.equal((await getMessages(w.url, 'ChatAgent', part.input.agent)).length, 2);
  }
  // The slots came back when the calls ended: the next turn's two calls both run.
  const again = await fanOut(w, 'fan-parent-2', 'delegate', kids.slice(2, 4).map((agent) => ({ agent, task: `[tokens:2] again ${agent}` })));
  assert.deepEqual(again.parts.map((p) => p.state), ['output-available', 'output-available']);
});

test("a cancelled turn's child calls give their slots back: the agent's next turn may make as many", async (t) => {
  const w = await workerFor(t, { bindings: { MAX_CHILD_CALLS_PER_TURN: '2', MAX_CHILD_CALLS_PER_AGENT: '2' } });
  const c = await tab(w, 'fan-cancel', undefined, 'Coordinator');
  const slow = ['slow-kid-1', 'slow-kid-2'].map((agent) => ({ agent, task: `[delay:300] [tokens:100] for ${agent}` }));
  const id = rid();
  c.send(chatRequest(id, [userMessage(rid('u'), fanOutText('delegate', slow))]));
  // Both children are answering: the agent's two slots are taken.
  await waitUntil(() => slow.every(({ agent }) => w.model.requests.some((r) => r.messages.some((m) => contentText(m.content).endsWith(`for ${agent}`)))), { what: 'both children asked their model' });
  c.send({ id, type: 'cf_agent_chat_request_cancel' });
  assert.equal((await c.waitFor(isDone(id), TURN_MS)).outcome, 'aborted');
  // The next turn's calls run once the cancelled ones have ended (their children cancelled too); a
  // slot kept by a cancelled call would refuse them on every try.
  const quick = ['quick-kid-1', 'quick-kid-2'];
  let states;
  for (let attempt = 0; attempt < 5; attempt++) {
    const again = await fanOut(w, `fan-cancel-${attempt}`, 'delegate', quick.map((agent) => ({ agent, task: `[tokens:2] ${attempt}` })));
    states = again.parts.map((p) => p.state);
    if (states.every((s) => s === 'output-available')) break;
    await new Promise((r) => setTimeout(r, 300));
  }
  assert.deepEqual(states, ['output-available', 'output-available']);
  for (const { agent } of slow) {
    const kid = await getMessages(w.url, 'ChatAgent', agent);
    const words = kid.at(-1).parts.filter((p) => p.type === 'text').map((p) => p.text).join('').trim().split(/\s+/);
    assert.ok(words.length < 100, `${agent}'s turn was cancelled with its parent's (${words.length} words)`);
  }
});

test('past TOKEN_LIMIT_PER_HOUR the next turn is refused on its request id, and a restart does not give the tokens back', async (t) => {
  const w = await workerFor(t, { bindings: { TOKEN_LIMIT_PER_HOUR: '20' } });
  const a = await tab(w, 'tokens');
  assert.equal((await ask(a)).outcome, 'completed', 'the first turn spends the budget');
  const usage = w.model.requests.length;
  await w.restart();
  const b = await tab(w, 'tokens');
  const refused = await ask(b);
  assert.equal(refused.error, true);
  assert.match(refused.body, /^token budget of this agent is spent \(limit 20 tokens an hour\); try again in \d+ s$/);
  assert.equal(b.ws.readyState, 1, 'the socket stays open');
  assert.equal(w.model.requests.length, usage, 'the model was not called');
  const other = await tab(w, 'tokens-elsewhere');
  assert.equal((await ask(other)).outcome, 'completed', 'the budget is per agent');
});

test('past TOKEN_LIMIT_PER_CALLER_PER_DAY the next turn of that client is refused on its request id, another client\'s runs, and a restart does not give the tokens back', async (t) => {
  const w = await workerFor(t, { bindings: { TOKEN_LIMIT_PER_CALLER_PER_DAY: '20' } });
  const room = rid('caller-tokens');
  const from = (address) => tab(w, room, { headers: { 'cf-connecting-ip': address } });
  const a = await from('203.0.113.7');
  assert.equal((await ask(a)).outcome, 'completed', 'the first turn spends the caller\'s budget');
  const refusedBefore = await ask(a);
  assert.equal(refusedBefore.error, true);
  assert.match(refusedBefore.body, /^token budget of this caller is spent \(limit 20 tokens a day\); try again in \d+ s$/);
  const b = await from('198.51.100.2');
  assert.equal((await ask(b)).outcome, 'completed', 'another client has its own budget');
  const usage = w.model.requests.length;
  await w.restart();
  const again = await from('203.0.113.7');
  const refused = await ask(again);
  assert.equal(refused.error, true, 'a new socket of the same client after a restart is still refused');
  assert.match(refused.body, /^token budget of this caller is spent \(limit 20 tokens a day\); try again in \d+ s$/);
  assert.equal(again.ws.readyState, 1, 'the socket stays open');
  assert.equal(w.model.requests.length, usage, 'the model was not called');
  const other = await from('192.0.2.9');
  assert.equal((await ask(other)).outcome, 'completed', 'a client that spent nothing runs after the restart');
});

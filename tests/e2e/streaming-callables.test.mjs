// End-to-end: streaming callables and a synced-state write that fails, through the stock `agents`
// client (`AgentClient`) on the real runtime. The demo's `ticks(n, everyMs)` streams 1…n to the
// client's `onChunk` and answers `{ticks: n}` last (`onDone` and the call's promise); a failing
// stream reaches `onError` and rejects; a caller that closes mid-stream stops the method at once
// (it records how far it got under the key-value entry `ticks-sent`, read through DEBUG_TOOLS=1's
// `kv-get` route). A state write refused by the store (`fail-next-state-write`) is undone: the tab
// is told `State update rejected` and given the stored state back, no other tab sees the change,
// and a callable's `set_state` reports the failure as its error.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import WS from 'ws';
import { AgentClient } from 'agents/client';
import { workerFor, rid, waitUntil } from '../support/e2e.mjs';
import { TEST_BUILD_DIR } from '../support/harness.mjs';

const AGENT = 'ChatAgent';
const DEBUG = { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function client(t, w, name) {
  const updates = [];
  const errors = [];
  const c = new AgentClient({
    agent: AGENT,
    name,
    host: new URL(w.url).host,
    WebSocket: WS,
    onStateUpdate: (state, source) => updates.push({ state, source }),
    onStateUpdateError: (error) => errors.push(error),
  });
  t.after(() => c.close());
  await c.ready;
  return { c, updates, errors };
}

const kvGet = async (w, room, key) =>
  (await (await w.fetch(`/agents/chat-agent/${room}/__debug/author/kv-get?key=${encodeURIComponent(key)}`)).json()).value;

test('a streaming callable sends its chunks to onChunk in order, then its result to onDone', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const a = await client(t, w, rid('stream'));
  const chunks = [];
  const seen = [];
  const result = await a.c.call('ticks', [4, 30], {
    stream: {
      onChunk: (chunk) => { chunks.push(chunk); seen.push('chunk'); },
      onDone: (final) => seen.push(['done', final]),
      onError: (error) => seen.push(['error', error]),
    },
  });
  assert.deepEqual(chunks, [1, 2, 3, 4]);
  assert.deepEqual(result, { ticks: 4 });
  assert.deepEqual(seen, ['chunk', 'chunk', 'chunk', 'chunk', ['done', { ticks: 4 }]]);

  const errors = [];
  await assert.rejects(
    a.c.call('ticks', [0, 10], { stream: { onChunk: () => {}, onError: (e) => errors.push(e) } }),
    { message: 'n must be between 1 and 1000' },
  );
  assert.deepEqual(errors, ['n must be between 1 and 1000']);
  assert.equal(await a.c.stub.echo('after'), 'after', 'the socket still answers');
});

test('a streaming call stops when its caller closes the socket', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = rid('cancel');
  const a = await client(t, w, room);
  const chunks = [];
  const call = a.c.call('ticks', [100, 400], { stream: { onChunk: (c) => chunks.push(c), onError: () => {} } });
  call.catch(() => {});
  await waitUntil(() => chunks.length >= 3, { what: 'three chunks', timeoutMs: 10000 });
  const received = chunks.length;
  a.c.close();
  await sleep(1500);
  const after = await kvGet(w, room, 'ticks-sent');
  await sleep(1200);
  assert.equal(await kvGet(w, room, 'ticks-sent'), after, 'no tick after the caller left');
  assert.equal(after, received, 'the method stopped at the chunk the caller last got');
  const b = await client(t, w, room);
  assert.equal(await b.c.stub.echo(1), 1, 'the agent goes on serving');
});

test('a state write the store refuses is undone and told to the tab; other tabs never see it', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = rid('state-fail');
  const a = await client(t, w, room);
  const b = await client(t, w, room);
  const arm = async () => {
    const res = await w.fetch(`/agents/chat-agent/${room}/__debug/fail-next-state-write`, { method: 'POST' });
    assert.equal(res.status, 200);
  };

  await arm();
  a.c.setState({ lost: true });
  await waitUntil(() => a.errors.length > 0, { what: 'cf_agent_state_error' });
  assert.deepEqual(a.errors, ['State update rejected']);
  await waitUntil(() => a.updates.filter((u) => u.source === 'server').length >= 2, { what: 'the stored state back' });
  assert.deepEqual(a.c.state, {}, 'the tab holds the stored state again');

  await arm();
  await assert.rejects(a.c.stub.setStateField('also', 'lost'), /could not be stored/);

  a.c.setState({ kept: 1 });
  await waitUntil(() => b.c.state?.kept === 1, { what: 'the next change in the other tab' });
  assert.deepEqual(
    b.updates.filter((u) => u.source === 'server').map((u) => u.state),
    [{}, { kept: 1 }],
    'b never saw a change that was not stored',
  );
  const late = await client(t, w, room);
  assert.deepEqual(late.c.state, { kept: 1 });
});

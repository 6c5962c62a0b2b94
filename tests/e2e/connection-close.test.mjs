// End-to-end: a socket's close is handled once on the real runtime, however it ends — a clean
// close from the client, an abrupt drop of the client's TCP connection, a close during a
// streaming call. DEBUG_TOOLS=1 appends each handled close's connection id to the key-value
// entry `closes` (read through the `kv-get` route) right where `on_close` is started.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerFor, tab, rid, waitUntil } from '../support/e2e.mjs';
import { TEST_BUILD_DIR } from '../support/harness.mjs';

const DEBUG = { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR };

const kvGet = async (w, room, key) =>
  (await (await w.fetch(`/agents/chat-agent/${room}/__debug/author/kv-get?key=${encodeURIComponent(key)}`)).json()).value;

test('each connection is closed once, whether it closes cleanly, drops, or goes mid-stream', { timeout: 30000 }, async (t) => {
  const w = await workerFor(t, DEBUG);
  const room = rid('closes');
  const clean = await tab(w, room, { pk: 'clean' });
  const dropped = await tab(w, room, { pk: 'dropped' });
  const streaming = await tab(w, room, { pk: 'streaming' });
  streaming.send({ type: 'rpc', id: 's1', method: 'ticks', args: [50, 100] });
  await streaming.waitFor((f) => f.type === 'rpc' && f.id === 's1' && f.done === false);

  clean.ws.close(1000, 'bye');
  dropped.ws._socket.destroy(); // no close frame: the runtime sees the connection fail
  streaming.ws.terminate();

  const closes = await waitUntil(async () => {
    const c = await kvGet(w, room, 'closes');
    return c && c.length >= 3 ? c : null;
  }, { timeoutMs: 15000, intervalMs: 100, what: 'three closes' });
  await new Promise((r) => setTimeout(r, 2000));
  const after = await kvGet(w, room, 'closes');
  assert.deepEqual([...after].sort(), ['clean', 'dropped', 'streaming'], `once each: ${JSON.stringify(after)}`);
  assert.equal(closes.length, 3);
});

// The agent's memory as the end-to-end memory tests read it: a worker of the test build
// (DEBUG_MEMORY=1 serves the agent's wasm linear memory size; never evicted), a tab on it warmed
// by one turn, and the agent's wasm memory in MiB (a wasm instance's memory never shrinks, so its
// size is the high-water mark of everything the agent ever held).
// Owns: memoryWorker, warmedTab, wasmMiB, turn.

import assert from 'node:assert/strict';
import { chatRequest, userMessage, isDone, TEST_BUILD_DIR } from './harness.mjs';
import { workerFor, tab, rid } from './e2e.mjs';

const MiB = 1024 * 1024;
const TURN_MS = 30000;

/** The wasm linear memory of agent `room` (a ChatAgent), in MiB. */
export async function wasmMiB(w, room) {
  const r = await fetch(`${w.url}/agents/chat-agent/${room}/__debug/memory`);
  assert.equal(r.status, 200, 'the test build serves …/__debug/memory with DEBUG_MEMORY=1');
  return (await r.json()).wasmMemoryBytes / MiB;
}

/** One chat request of `text` on `client`; resolves to its terminal frame. */
export async function turn(client, text) {
  const id = rid();
  client.cursor = client.frames.length;
  client.send(chatRequest(id, [userMessage(rid('u'), text)]));
  return client.waitFor(isDone(id), TURN_MS);
}

/** A test-build worker that serves its memory and never evicts, closed when `t` ends. */
export const memoryWorker = (t, bindings = {}) => workerFor(t, {
  bindings: { DEBUG_MEMORY: '1', ...bindings }, buildDir: TEST_BUILD_DIR, miniflare: { unsafePreventEviction: true },
});

/** A memory worker's tab on `room` after one warm-up turn, and the agent's wasm memory then. */
export async function warmedTab(t, room, bindings = {}) {
  const w = await memoryWorker(t, bindings);
  const client = await tab(w, room);
  assert.equal((await turn(client, '[tokens:5] warm up')).outcome, 'completed');
  return { w, room, client, before: await wasmMiB(w, room) };
}

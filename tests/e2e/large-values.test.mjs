// End-to-end: values over production's 2,000,000-byte row limit on the real runtime. Three
// client tool results of 900 KB answered in one step (automatic continuation), and a 3 MB
// server tool output (the test-only `large_output` tool of DEBUG_TOOLS=1), are each stored
// whole: after the runtime is killed and started again on the same storage, `get-messages` and
// the stock client's transcript hold them byte-identical, and no value or row in the Durable
// Object's SQLite files is over the limit.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, userMessage, getMessages, isDone, TEST_BUILD_DIR } from '../support/harness.mjs';
import { workerFor, rid, chunkFrames, followContinuation, toolPart, tab } from '../support/e2e.mjs';
import { sqliteFiles, largestStoredValue } from '../support/sqlite-files.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 30000;
const LIMIT = 2_000_000;
const TOOLS = ['blobA', 'blobB', 'blobC'].map((name) => ({
  name, description: `Returns ${name}.`, parameters: { type: 'object', properties: {} },
}));

/** About `bytes` bytes of text mixing one- to four-byte characters, tagged so no two are alike. */
function filler(bytes, tag) {
  let out = '';
  for (let n = 0; Buffer.byteLength(out) < bytes; n++) out += `${tag}${n}-é€😀-`.repeat(64);
  return out;
}

/** No stored value and no row of any Durable Object database is over the limit. */
async function assertUnderTheRowLimit(persistDir) {
  const files = await sqliteFiles(persistDir);
  assert.ok(files.length > 0, 'the database files are there');
  for (const file of files) {
    const { value, row } = largestStoredValue(file);
    assert.ok(value.bytes <= LIMIT, `largest value ${value.bytes} bytes in ${value.where}`);
    assert.ok(row.bytes <= LIMIT, `largest row ${row.bytes} bytes in ${row.where}`);
  }
}

/** The stock client's transcript of `room` once it has loaded (normalised like the server's JSON). */
async function stockClientTranscript(t, w, room, count) {
  const client = await mountAgentChat({ url: w.url, name: room, hook: 'agents' });
  t.after(() => client.unmount());
  await client.waitFor((c) => c.messages.length === count, TURN_MS);
  return JSON.parse(JSON.stringify(client.chat.messages));
}

test('three 900 KB client tool results answered automatically are stored whole and read back identical after a restart', async (t) => {
  const w = await workerFor(t, { miniflare: { unsafePreventEviction: true } });
  const room = 'lv-client-tools';
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), '[tools:blobA,blobB,blobC]')], { clientTools: TOOLS }));
  await a.waitFor(isDone(id), TURN_MS);
  const calls = chunkFrames(a.frames, id).map((f) => JSON.parse(f.body)).filter((c) => c.type === 'tool-input-available');
  assert.deepEqual(calls.map((c) => c.toolName), ['blobA', 'blobB', 'blobC']);
  const outputs = calls.map((c) => ({ blob: filler(900_000, c.toolName) }));
  calls.forEach((c, i) => {
    const frame = { type: 'cf_agent_tool_result', toolCallId: c.toolCallId, toolName: c.toolName, output: outputs[i], autoContinue: true };
    assert.ok(Buffer.byteLength(JSON.stringify(frame)) < 1024 * 1024, 'each result is under the 1 MiB frame limit');
    a.send(frame);
  });
  const { end } = await followContinuation(a, { probeMs: TURN_MS, turnMs: TURN_MS });
  assert.equal(end.outcome, 'completed');
  const before = await getMessages(w.url, AGENT, room);
  assert.deepEqual(before.map((m) => m.role), ['user', 'assistant', 'assistant']);
  assert.ok(Buffer.byteLength(JSON.stringify(before[1])) > LIMIT, 'the tool call message is over the row limit');
  assert.match(before[2].parts.find((p) => p.type === 'text').text, /^Tool results: blobA=<\d+ bytes>; blobB=/);

  await w.restart();
  const after = await getMessages(w.url, AGENT, room);
  assert.deepEqual(after, before, 'the transcript reads back identical');
  calls.forEach((c, i) => assert.deepEqual(toolPart(after, c.toolCallId).output, outputs[i]));
  assert.deepEqual(await stockClientTranscript(t, w, room, before.length), before, "the stock client's transcript");
  await assertUnderTheRowLimit(w.persistDir);
});

test('a 3 MB server tool output is stored whole and read back identical after a restart', async (t) => {
  const w = await workerFor(t, { bindings: { DEBUG_TOOLS: '1' }, buildDir: TEST_BUILD_DIR, miniflare: { unsafePreventEviction: true } });
  const room = 'lv-server-tool';
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), '[tool:large_output:{"bytes":3000000}]')]));
  const done = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'completed');
  const before = await getMessages(w.url, AGENT, room);
  const output = before[1].parts.find((p) => p.type === 'tool-large_output')?.output;
  assert.ok(output && Buffer.byteLength(output.blob) >= 3_000_000, 'the whole output is in the transcript');
  assert.match(before[1].parts.filter((p) => p.type === 'text').map((p) => p.text).join(''), /large_output=<\d+ bytes>/);

  await w.restart();
  const after = await getMessages(w.url, AGENT, room);
  assert.deepEqual(after, before, 'the transcript reads back identical');
  assert.equal(after[1].parts.find((p) => p.type === 'tool-large_output').output.blob, output.blob);
  assert.deepEqual(await stockClientTranscript(t, w, room, before.length), before, "the stock client's transcript");
  await assertUnderTheRowLimit(w.persistDir);
});

test('without DEBUG_TOOLS the test-only tool is not offered', async (t) => {
  const w = await workerFor(t);
  const a = await tab(w, 'lv-no-debug');
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), 'hello')]));
  await a.waitFor(isDone(id), TURN_MS);
  const offered = (w.model.requests.at(-1).tools ?? []).map((x) => x.function?.name ?? x.name);
  assert.ok(!offered.includes('large_output'), `offered: ${offered}`);
  const armed = await w.fetch(`/agents/chat-agent/lv-no-debug/__debug/fail-next-message-write`, { method: 'POST' });
  assert.notEqual(armed.status, 200, 'the debug route is not served');
});

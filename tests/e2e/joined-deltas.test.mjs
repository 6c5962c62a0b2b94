// End-to-end: a fast model's words that reach the agent in one read of its body are one
// `text-delta` chunk, to every tab alike, none over 16 KiB, the text whole and in order; the
// stored answer is the same text. (A paced model's words, one per read, stay one delta each:
// foundation.test.mjs.)

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, userMessage, getMessages, isDone, textOf } from '../support/harness.mjs';
import { workerFor, rid, chunkFrames, tab } from '../support/e2e.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 30000;
const MAX_JOINED_BYTES = 16 * 1024;

const words = (n) => Array.from({ length: n }, (_, i) => `w${i + 1}`).join(' ');
const deltasOf = (frames, id) => chunkFrames(frames, id)
  .map((f) => JSON.parse(f.body))
  .filter((c) => c.type === 'text-delta');

for (const n of [1000, 20000]) {
  test(`a ${n}-word reply streamed as fast as the model can reaches every tab in far fewer deltas than words, whole, none over 16 KiB`, async (t) => {
    const w = await workerFor(t);
    const room = `room-joined-${n}`;
    const a = await tab(w, room);
    const b = await tab(w, room);
    const markA = a.mark();
    const markB = b.mark();
    const id = rid();
    a.send(chatRequest(id, [userMessage(rid('u'), `[tokens:${n}] go`)]));
    await a.waitFor(isDone(id), TURN_MS);
    await b.waitFor(isDone(id), TURN_MS);

    const expected = words(n);
    const framesA = a.since(markA);
    const framesB = b.since(markB);
    assert.equal(textOf(framesA, id), expected);
    const deltas = deltasOf(framesA, id);
    assert.ok(deltas.length >= 1 && deltas.length < n / 4, `${deltas.length} deltas for ${n} words`);
    const sizes = deltas.map((c) => Buffer.byteLength(c.delta));
    assert.ok(Math.max(...sizes) <= MAX_JOINED_BYTES, `largest delta ${Math.max(...sizes)} bytes`);
    assert.deepEqual(chunkFrames(framesB, id), chunkFrames(framesA, id), 'the other tab gets the same chunks');

    const [, answer] = await getMessages(w.url, AGENT, room);
    assert.equal(answer.parts.find((p) => p.type === 'text')?.text, expected);
  });
}

// A model provider that answers 429/5xx: the agent (real workerd, real fetch to the scripted
// model server) tries the same request again after a backoff, so a transient failure never
// reaches the tabs; a failure that persists through the retries is shown once, readably.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, userMessage, getMessages, isDone } from '../support/harness.mjs';
import { workerFor, rid, responsesOf, contentText, tab } from '../support/e2e.mjs';

const AGENT = 'ChatAgent';
const TURN_MS = 20000;

/** Model requests whose last user message is `text`. */
function requestsFor(model, text) {
  return model.requests.filter((body) => {
    const users = (body.messages ?? []).filter((m) => m.role === 'user');
    return contentText(users.at(-1)?.content) === text;
  });
}

test('a 503 from the model is retried and the turn completes as if nothing happened', async (t) => {
  const w = await workerFor(t);
  const room = 'room-retry-once';
  const a = await tab(w, room);
  const b = await tab(w, room);
  const text = 'flaky provider [http-once:503]';
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), text)]));
  for (const c of [a, b]) {
    const done = await c.waitFor(isDone(id), TURN_MS);
    assert.equal(done.outcome, 'completed');
    assert.ok(!responsesOf(c.frames, id).some((f) => f.error), 'no error reaches the tabs');
  }
  const sent = requestsFor(w.model, text);
  assert.equal(sent.length, 2, 'the request was sent twice');
  assert.deepEqual(sent[1], sent[0], 'the same request both times');
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored.length, 2);
  const answer = stored[1].parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  assert.equal(answer, `You said: ${text}`);
});

test('a model that keeps answering 429 is tried three times, then the tabs get its error once', async (t) => {
  const w = await workerFor(t);
  const room = 'room-retry-exhausted';
  const a = await tab(w, room);
  const text = 'always limited [http:429]';
  const id = rid();
  a.send(chatRequest(id, [userMessage(rid('u'), text)]));
  const done = await a.waitFor(isDone(id), TURN_MS);
  assert.equal(done.outcome, 'error');
  assert.equal(requestsFor(w.model, text).length, 3, 'the first attempt and two retries');
  const errors = responsesOf(a.frames, id).filter((f) => f.error);
  assert.equal(errors.length, 1);
  assert.match(errors[0].body, /429.*scripted error 429/);
  assert.equal((await getMessages(w.url, AGENT, room)).length, 1, 'no answer stored');
});

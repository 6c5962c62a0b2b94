// End-to-end: compaction written by the agent's model, on the real runtime with the scripted model.
// The demo agent with `DEMO_SUMMARIZE=1` and a context of at most 6 messages: once a turn's
// conversation no longer fits, its summarizer asks the model (one request outside the turn, with
// the summary instruction) before the turn's own model call; the turn's request carries that summary
// in place of the messages it covers; after a runtime restart the stored summary is reused without
// asking the model again.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerFor, tab, rid } from '../support/e2e.mjs';
import { userMessage, sendAndWait, getMessages } from '../support/harness.mjs';

const AGENT = 'ChatAgent';
const SUMMARY_PREFIX = 'Summary of the earlier part of this conversation:\n';
const isSummaryRequest = (body) => String(body.messages?.[0]?.content ?? '').startsWith('Summarize this conversation');
const summaryIn = (body) => body.messages.find((m) => m.role === 'system' && String(m.content).startsWith(SUMMARY_PREFIX))?.content.slice(SUMMARY_PREFIX.length);
const userTexts = (body) => body.messages.filter((m) => m.role === 'user').map((m) => String(m.content));

test('a summary the model writes replaces what is left out and is reused after a restart', { timeout: 90000 }, async (t) => {
  const w = await workerFor(t, { bindings: { DEMO_SUMMARIZE: '1', MODEL_CONTEXT_MESSAGES: '6' } });
  const room = 'model-summary';
  const a = await tab(w, room);
  for (let i = 0; i < 4; i++) {
    const { done } = await sendAndWait(a, rid(), [userMessage(rid('u'), `fact ${i}: the code word is word${i}`)], {}, 15000);
    assert.equal(done.outcome, 'completed', `turn ${i}`);
  }
  const asked = w.model.requests.filter(isSummaryRequest);
  assert.equal(asked.length, 1, 'the model was asked for one summary');
  const prompt = userTexts(asked[0]).join('\n');
  assert.match(prompt, /user: fact 0: the code word is word0/, 'the oldest messages are what it summarizes');
  assert.doesNotMatch(prompt, /fact 3/, 'the newest are kept, not summarized');

  const turn = w.model.requests.at(-1);
  assert.ok(!isSummaryRequest(turn), 'the turn called the model after the summary');
  const summary = summaryIn(turn);
  assert.ok(summary, 'the turn carries the summary');
  assert.match(summary, /word0/, "the model's summary (the scripted model echoes its prompt)");
  assert.ok(userTexts(turn).every((text) => !text.startsWith('fact 0')), 'what it covers is left out');
  assert.ok(userTexts(turn).some((text) => text.startsWith('fact 3')), 'the newest question is sent');
  a.close();

  await w.restart();
  const b = await tab(w, room);
  const { done } = await sendAndWait(b, rid(), [userMessage(rid('u'), 'fact 4: the code word is word4')], {}, 15000);
  assert.equal(done.outcome, 'completed');
  assert.equal(w.model.requests.filter(isSummaryRequest).length, 1, 'not asked again after the restart');
  assert.equal(summaryIn(w.model.requests.at(-1)), summary, 'the stored summary is reused');
  assert.equal((await getMessages(w.url, AGENT, room)).length, 10, 'every message is still stored');
});

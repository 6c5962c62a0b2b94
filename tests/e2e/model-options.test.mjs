// The model options a turn sets, token usage and message metadata, on the example agent
// (examples/support-agent) on workerd, driven by the real useAgentChat against the scripted
// OpenAI-compatible model: a turn whose custom body asks for the order as JSON sends the model
// its schema (`response_format`), its sampling options and its provider option; the usage the
// model streams reaches `on_step_end`, `on_chat_response` and the answer's `metadata`, which the
// stock client shows (`message.metadata`) and the stored message keeps, with when the answer was
// started, the model and the agent's own field; a turn without the body sends none of it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getMessages } from '../support/harness.mjs';
import { EXAMPLE_AGENT, startExample } from '../support/example-agent.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';
import { waitUntil } from '../support/e2e.mjs';
import { wordsOf } from '../support/model-server.mjs';

const AGENT = EXAMPLE_AGENT;

const textOf = (message) => message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

const ORDER_SCHEMA = {
  type: 'object',
  properties: { order: { type: 'string' }, status: { type: 'string' } },
  required: ['order', 'status'],
  additionalProperties: false,
};

test('structured output, sampling and provider options reach the model; usage and metadata reach the client, the store and the hooks', { timeout: 120000 }, async (t) => {
  const { url, model, logs } = await startExample(t);
  const tab = await mountAgentChat({ url, name: 'options-1', agent: AGENT });
  t.after(() => tab.unmount());
  const before = Date.now();

  await tab.chat.sendMessage({ text: 'status of order A-1' }, { body: { format: 'order' } });
  const answer = await tab.waitFor((chat) => {
    const last = chat.messages.at(-1);
    return chat.status === 'ready' && last?.role === 'assistant' && textOf(last).length > 0 && last?.metadata?.usage && last;
  }, 30000);

  assert.equal(model.requests.length, 1);
  const sent = model.requests[0];
  assert.deepEqual(sent.response_format, {
    type: 'json_schema',
    json_schema: { name: 'order_status', schema: ORDER_SCHEMA, strict: true },
  }, 'the schema the answer must follow is sent');
  assert.equal(sent.top_p, 0.5);
  assert.equal(sent.seed, 7);
  assert.deepEqual(sent.stop, ['END']);
  assert.equal(sent.reasoning_effort, 'low', 'a provider option is a field of the body');
  assert.deepEqual(sent.stream_options, { include_usage: true });

  const meta = answer.metadata;
  assert.equal(meta.source, 'support-agent', "the agent's own field");
  assert.equal(meta.model, 'scripted-model');
  assert.ok(meta.createdAt >= before && meta.createdAt <= Date.now(), `createdAt ${meta.createdAt}`);
  const words = wordsOf(textOf(answer)).length;
  assert.equal(meta.usage.outputTokens, words, 'the output tokens the model streamed');
  assert.ok(meta.usage.inputTokens > 0);
  assert.equal(meta.usage.totalTokens, meta.usage.inputTokens + meta.usage.outputTokens);

  const stored = await getMessages(url, AGENT, 'options-1');
  assert.deepEqual(stored.at(-1).metadata, meta, 'the stored answer keeps the same metadata');

  const step = await waitUntil(() => logs.find((l) => l.startsWith('step end ')), { timeoutMs: 10000, what: 'the on_step_end log line' });
  const stepReport = JSON.parse(step.slice('step end '.length));
  assert.equal(stepReport.step, 1);
  assert.equal(stepReport.inputTokens, meta.usage.inputTokens);
  assert.equal(stepReport.outputTokens, words);
  const line = await waitUntil(() => logs.find((l) => l.startsWith('chat response ')), { timeoutMs: 10000, what: 'the on_chat_response log line' });
  const response = JSON.parse(line.slice('chat response '.length));
  assert.equal(response.steps, 1);
  assert.equal(response.outputTokens, words);

  // The next turn, without the body, sends none of the turn's options.
  await tab.chat.sendMessage({ text: 'thanks' });
  await tab.waitFor((chat) => chat.status === 'ready' && chat.messages.length === 4, 30000);
  const plain = model.requests.at(-1);
  for (const key of ['response_format', 'top_p', 'seed', 'stop', 'reasoning_effort']) {
    assert.equal(plain[key], undefined, `${key} is not sent`);
  }
  const second = (await getMessages(url, AGENT, 'options-1')).at(-1);
  assert.ok(second.metadata.createdAt >= meta.createdAt, 'each answer has its own metadata');
  assert.notEqual(second.id, answer.id);
});

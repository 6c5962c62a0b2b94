// End-to-end on the real runtime: the Anthropic Messages provider against a scripted server speaking
// that API (tests/support/anthropic-server.mjs: real server-sent events, a prompt cache that reads
// and writes at `cache_control` breakpoints). With MODEL_PROVIDER=anthropic a turn with an image and
// a tool call reaches the model as Messages API blocks (an `image` block, `tool_use` then
// `tool_result`), the key and version headers are sent, the server tool runs, and the answer streams
// to the tab; the next turn's request starts as the one before it did, so the server's cache is read.
// A turn may pick its provider by name (`provider` in the demo's custom body): one turn goes to the
// Anthropic server with its AI Gateway metadata, the next back to the default OpenAI-compatible one;
// a name no provider has fails the turn with an error frame that says so, and the socket stays open.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getMessages, userMessage, sendAndWait } from '../support/harness.mjs';
import { workerFor, tab, rid } from '../support/e2e.mjs';
import { startAnthropicServer } from '../support/anthropic-server.mjs';

const AGENT = 'ChatAgent';
const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const marked = (block) => block?.cache_control?.type === 'ephemeral';

async function anthropicServer(t) {
  const server = await startAnthropicServer();
  t.after(() => server.close());
  return server;
}

test('MODEL_PROVIDER=anthropic: an image and a tool call go as Messages API blocks with cache breakpoints, and the next turn reads the cache', { timeout: 60000 }, async (t) => {
  const claude = await anthropicServer(t);
  const w = await workerFor(t, { bindings: { MODEL_PROVIDER: 'anthropic', MODEL: 'claude-test', ANTHROPIC_BASE_URL: claude.url, ANTHROPIC_API_KEY: 'ant-test-key' } });
  const room = 'claude-tools';
  const c = await tab(w, room);
  const message = { id: rid('u'), role: 'user', parts: [
    { type: 'text', text: 'weather here? [tool:get_weather:{"city":"Paris"}]' },
    { type: 'file', mediaType: 'image/png', url: PNG, filename: 'dot.png' },
  ] };
  const { done, text } = await sendAndWait(c, rid(), [message], {}, 20000);
  const failure = c.frames.find((f) => f.type === 'cf_agent_use_chat_response' && f.error);
  assert.equal(done.outcome, 'completed', failure?.body);
  assert.match(text, /^Calling get_weather\.The tool said \{.*"city":"Paris"/);

  assert.equal(claude.requests.length, 2, 'one call for the tool, one for the answer');
  const [first, second] = claude.requests;
  assert.equal(first.headers['x-api-key'], 'ant-test-key');
  assert.equal(first.headers['anthropic-version'], '2023-06-01');
  assert.equal(first.body.model, 'claude-test');
  assert.equal(first.body.stream, true);
  assert.ok(first.body.max_tokens > 0, 'max_tokens is always sent');
  assert.ok(marked(first.body.system.at(-1)), 'the system prompt ends with a breakpoint');
  assert.ok(marked(first.body.tools.at(-1)), 'the tools end with a breakpoint');
  const get = first.body.tools.find((tool) => tool.name === 'get_weather');
  assert.equal(get.input_schema.properties.city.type, 'string');
  const userBlocks = first.body.messages[0].content;
  assert.equal(userBlocks[0].type, 'text');
  assert.deepEqual(userBlocks[1].source, { type: 'base64', media_type: 'image/png', data: PNG.slice('data:image/png;base64,'.length) });
  assert.ok(marked(userBlocks.at(-1)), 'the newest message ends with a breakpoint');

  const [, assistant, results] = second.body.messages;
  assert.equal(assistant.role, 'assistant');
  const use = assistant.content.find((b) => b.type === 'tool_use');
  assert.equal(use.name, 'get_weather');
  assert.deepEqual(use.input, { city: 'Paris' });
  assert.equal(results.role, 'user');
  assert.equal(results.content[0].type, 'tool_result');
  assert.equal(results.content[0].tool_use_id, use.id);
  assert.ok(claude.usages[1].cache_read_input_tokens > 0, 'the second call read what the first wrote');

  const stored = await getMessages(w.url, AGENT, room);
  const call = stored.at(-1).parts.find((p) => p.type === 'tool-get_weather');
  assert.equal(call.state, 'output-available');
  assert.deepEqual(call.input, { city: 'Paris' });

  const next = await sendAndWait(c, rid(), [...stored, userMessage(rid('u'), 'thanks')], {}, 20000);
  assert.equal(next.done.outcome, 'completed');
  assert.equal(next.text, 'Claude heard: thanks');
  const third = claude.usages[2];
  assert.ok(third.cache_read_input_tokens > claude.usages[1].cache_read_input_tokens,
    `the next turn reads the longer cached start: ${JSON.stringify(claude.usages)}`);
  assert.ok(c.isOpen);
});

test('a turn picks its provider by name, with its gateway metadata; an unknown name is an error frame', { timeout: 60000 }, async (t) => {
  const claude = await anthropicServer(t);
  const w = await workerFor(t, { bindings: { ANTHROPIC_BASE_URL: claude.url, ANTHROPIC_API_KEY: 'ant-test-key' } });
  const c = await tab(w, 'claude-pick');

  const picked = await sendAndWait(c, rid(), [userMessage(rid('u'), 'hello claude')], { provider: 'anthropic', gatewayMetadata: { user: 'u-7' } }, 20000);
  assert.equal(picked.done.outcome, 'completed');
  assert.equal(picked.text, 'Claude heard: hello claude');
  assert.equal(claude.requests.length, 1);
  assert.equal(claude.requests[0].headers['cf-aig-metadata'], '{"user":"u-7"}');
  assert.equal(w.model.requests.length, 0, 'the default provider was not called');

  const history = await getMessages(w.url, AGENT, 'claude-pick');
  const plain = await sendAndWait(c, rid(), [...history, userMessage(rid('u'), 'hello default')], {}, 20000);
  assert.equal(plain.done.outcome, 'completed');
  assert.equal(claude.requests.length, 1, 'the next turn is back on the default provider');
  assert.equal(w.model.requests.length, 1);
  assert.equal(w.model.requests[0].messages.at(-1).content, 'hello default');

  const id = rid();
  const mark = c.mark();
  c.send({ id, init: { method: 'POST', body: JSON.stringify({ messages: [userMessage(rid('u'), 'hi')], trigger: 'submit-message', provider: 'gemini' }) }, type: 'cf_agent_use_chat_request' });
  const error = await c.waitFor((f) => f.type === 'cf_agent_use_chat_response' && f.id === id && f.error, 20000);
  assert.match(error.body, /No model provider named `gemini` \(configured: openai, anthropic, workers-ai\)/);
  assert.ok(c.since(mark).length > 0);
  assert.ok(c.isOpen, 'the socket stays open');
});

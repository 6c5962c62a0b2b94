// End-to-end on the real runtime: the Workers AI provider (MODEL_PROVIDER=workers-ai) over an `AI`
// binding. The binding is a local stand-in (a worker reached over a service binding, no network) whose
// `run(model, input, options)` streams server-sent events in the two shapes Workers AI models use: native
// `{response, tool_calls}` lines and OpenAI-style chunks. Its replies describe what it received,
// so the tests see that the input reached it as plain JSON (tool parameter schemas included),
// that text and tool calls of both shapes drive a turn with a server tool, and that with
// `AI_GATEWAY_ID` the call carries the gateway options as `run`'s third argument, and with
// `WORKERS_AI_IMAGES=1` an image the tab sends reaches the model as an `image_url` part. The binding
// is a real model with no access check here, so the agents run with ALLOW_ANONYMOUS=1; without it
// a tab's connection is refused.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Miniflare, convertV4MiniflareOptions } from 'miniflare';
import { BUILD_DIR, DEFAULT_BINDINGS, agentWorkerOptions, getMessages, userMessage, sendAndWait } from '../support/harness.mjs';
import { tab, rid, refusedUpgrade } from '../support/e2e.mjs';

const AGENT = 'ChatAgent';

// The stand-in binding. A reply to a conversation ending in a tool result says what the tool
// returned; "weather" asks for get_weather; anything else describes the input it got.
const STAND_IN = `
const sse = (events) => new ReadableStream({
  start(controller) {
    const enc = new TextEncoder();
    for (const e of events) controller.enqueue(enc.encode('data: ' + e + '\\n\\n'));
    controller.close();
  },
});
const words = (text) => text.match(/\\S+\\s*/g) ?? [];
import { WorkerEntrypoint } from 'cloudflare:workers';
export class AiStandIn extends WorkerEntrypoint {
    async run(model, input, options) {
      const messages = input.messages;
      const last = messages[messages.length - 1];
      const openaiStyle = model.includes('openai-style');
      const tool = input.tools?.find((t) => t.function?.name === 'get_weather');
      let text = null, call = null;
      if (last.role === 'tool') text = 'The tool said ' + last.content;
      else if (Array.isArray(last.content)) text = 'parts ' + last.content.map((p) => p.type === 'image_url' ? 'image_url:' + p.image_url.url.slice(0, 22) : p.type + ':' + p.text).join(' | ');
      else if (/weather/i.test(last.content)) call = { name: 'get_weather', arguments: { city: 'Paris' } };
      else text = 'model ' + model + ', stream ' + input.stream + ', ' + messages.length + ' messages, city schema '
        + (tool ? tool.function.parameters.properties.city.type : 'missing')
        + (options === undefined ? '' : ', options ' + JSON.stringify(options));
      if (!openaiStyle) {
        const lines = text !== null
          ? words(text).map((w) => JSON.stringify({ response: w }))
          : [JSON.stringify({ response: '', tool_calls: [call] })];
        return sse([...lines, '[DONE]']);
      }
      const chunk = (delta, finish = null) => JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] });
      const lines = text !== null
        ? [...words(text).map((w) => chunk({ content: w })), chunk({}, 'stop')]
        : [chunk({ tool_calls: [{ index: 0, id: 'call_w1', type: 'function',
            function: { name: call.name, arguments: JSON.stringify(call.arguments) } }] }, 'tool_calls')];
      return sse([...lines, '[DONE]']);
    }
}
export default { fetch() { return new Response('stand-in'); } };
`;

async function workersAiAgent(t, model, vars = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-wai-'));
  const agent = agentWorkerOptions({
    buildDir: BUILD_DIR,
    bindings: { ...DEFAULT_BINDINGS, MODEL_PROVIDER: 'workers-ai', MODEL: model, ALLOW_ANONYMOUS: '1', ...vars },
    options: { serviceBindings: { AI: { name: 'ai-stand-in', entrypoint: 'AiStandIn' } } },
  });
  const mf = new Miniflare(convertV4MiniflareOptions({
    host: '127.0.0.1', port: 0, cf: false, resourcePersistencePath: dir,
    workers: [
      { name: 'agent', ...agent },
      { name: 'ai-stand-in', modules: true, script: STAND_IN, compatibilityDate: agent.compatibilityDate },
    ],
  }));
  t.after(async () => {
    await mf.dispose().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });
  const ready = await mf.ready;
  return `http://127.0.0.1:${ready.port}`;
}

for (const model of ['@cf/test/native-lines', '@cf/test/openai-style']) {
  test(`${model}: the input reaches the binding as plain JSON and the reply streams as text`, async (t) => {
    const url = await workersAiAgent(t, model);
    const c = await tab(url, 'wai-text');
    const { done, text } = await sendAndWait(c, rid(), [userMessage(rid('u'), 'hello there')]);
    const failure = c.frames.find((f) => f.type === 'cf_agent_use_chat_response' && f.error);
    assert.equal(done.outcome, 'completed', failure?.body);
    assert.equal(text, `model ${model}, stream true, 2 messages, city schema string`);
  });

  test(`${model}: a tool call runs the server tool and the model answers with its result`, async (t) => {
    const url = await workersAiAgent(t, model);
    const room = 'wai-tools';
    const c = await tab(url, room);
    const { done } = await sendAndWait(c, rid(), [userMessage(rid('u'), "what's the weather?")]);
    assert.equal(done.outcome, 'completed');
    const stored = await getMessages(url, AGENT, room);
    const answer = stored.at(-1);
    const call = answer.parts.find((p) => p.type === 'tool-get_weather');
    assert.equal(call.state, 'output-available');
    assert.deepEqual(call.input, { city: 'Paris' });
    const said = answer.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    assert.match(said, /^The tool said \{.*"city":"Paris"/);
  });
}

test('with AI_GATEWAY_ID the binding is called with the gateway options', async (t) => {
  const model = '@cf/test/native-lines';
  const vars = { AI_GATEWAY_ID: 'support-gw', AI_GATEWAY_SKIP_CACHE: '1', AI_GATEWAY_CACHE_TTL: '3600' };
  const url = await workersAiAgent(t, model, vars);
  const c = await tab(url, 'wai-gateway');
  const { done, text } = await sendAndWait(c, rid(), [userMessage(rid('u'), 'hello there')]);
  assert.equal(done.outcome, 'completed');
  assert.equal(text, `model ${model}, stream true, 2 messages, city schema string, options {"gateway":{"id":"support-gw","skipCache":true,"cacheTtl":3600}}`);
});

test('with WORKERS_AI_IMAGES=1 an image in a user message reaches the vision model as an image_url part', async (t) => {
  const model = '@cf/test/native-lines';
  const url = await workersAiAgent(t, model, { WORKERS_AI_IMAGES: '1' });
  const c = await tab(url, 'wai-vision');
  const png = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  const message = { id: rid('u'), role: 'user', parts: [{ type: 'text', text: 'what is this?' }, { type: 'file', mediaType: 'image/png', url: png, filename: 'dot.png' }] };
  const { done, text } = await sendAndWait(c, rid(), [message]);
  assert.equal(done.outcome, 'completed');
  assert.equal(text, 'parts text:what is this? | image_url:data:image/png;base64,');
});

test('without ALLOW_ANONYMOUS or AUTH_TOKEN the binding is a real model: a tab\'s connection and get-messages are refused', async (t) => {
  const url = await workersAiAgent(t, '@cf/test/native-lines', { ALLOW_ANONYMOUS: '' });
  const refused = await refusedUpgrade(url, 'wai-closed');
  assert.equal(refused.status, 403, refused.body);
  assert.match(refused.body, /^anonymous access is off: .*AUTH_TOKEN.*ALLOW_ANONYMOUS/);
  const read = await fetch(`${url}/agents/chat-agent/wai-closed/get-messages`);
  assert.equal(read.status, 403);
  assert.match(await read.text(), /^anonymous access is off: /);
});

test('a gateway model slug goes through the AI binding with the default gateway and the turn\'s metadata', async (t) => {
  const model = 'openai/gpt-4o-mini';
  const url = await workersAiAgent(t, model);
  const c = await tab(url, 'wai-slug');
  const { done, text } = await sendAndWait(c, rid(), [userMessage(rid('u'), 'hello there')], { gatewayMetadata: { user: 'u-7' } });
  assert.equal(done.outcome, 'completed');
  assert.equal(text, `model ${model}, stream true, 2 messages, city schema string, options {"gateway":{"id":"default","metadata":{"user":"u-7"}}}`);
});

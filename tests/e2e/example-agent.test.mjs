// The crate used as a library: examples/support-agent (depends on durable-chat with no
// feature, its own agent, tools, fetch entry and wrangler.toml), built to wasm
// (scripts/test.sh runs `bash examples/support-agent/build.sh --dev`), run on workerd with its own
// Durable Object class. One turn calls the typed tool; a second asks for the refund, which waits
// for the user's approval, and runs once approved. The crate with no feature brings no demo code:
// the bundle's only agent class is the example's own.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, chatRequest, connect, getMessages, isDone, userMessage } from '../support/harness.mjs';
import { EXAMPLE_AGENT, startExample } from '../support/example-agent.mjs';

const AGENT = EXAMPLE_AGENT;

test("the crate as a dependency with no feature brings no demo class into the agent's bundle", () => {
  const bundle = readFileSync(join(ROOT, 'examples', 'support-agent', 'build', 'index.js'), 'utf8');
  const classes = [...bundle.matchAll(/agentClass\([^,]+, "([A-Za-z0-9_]+)"\)/g)].map((m) => m[1]).sort();
  assert.deepEqual(classes, ['SupportAgentDO'], 'the exported agent classes (ChatAgent and Coordinator are the demo feature)');
});

const toolPart = (message, name) => message.parts.find((p) => p.type === `tool-${name}`);

test('an agent defined outside the crate runs a turn with its typed tool, and its refund waits for approval', { timeout: 120000 }, async (t) => {
  const { url, model } = await startExample(t);
  assert.equal((await fetch(`${url}/`)).status, 404, 'its own fetch entry: no demo page');
  assert.equal((await fetch(`${url}/agents/support-agent-do/x/__chat-channel`)).status, 400, 'the internal channel is refused');

  const tab = await connect(url, AGENT, 'customer-1');
  tab.send(chatRequest('r1', [userMessage('u1', 'where is my order [tool:lookup_order:{"order":"A-42"}]')]));
  assert.equal((await tab.waitFor(isDone('r1'), 30000)).outcome, 'completed');
  const offered = (model.requests[0].tools ?? []).map((x) => x.function?.name).sort();
  assert.deepEqual(offered, ['lookup_order', 'refund'], "the model is offered the example's tools");
  assert.match(JSON.stringify(model.requests[0].messages[0]), /You help customers with their orders/);
  let stored = await getMessages(url, AGENT, 'customer-1');
  const lookup = toolPart(stored[1], 'lookup_order');
  assert.equal(lookup.state, 'output-available');
  assert.deepEqual(lookup.output, { order: 'A-42', status: 'shipped' });

  tab.send(chatRequest('r2', [...stored, userMessage('u2', 'refund it [tool:refund:{"order":"A-42"}]')]));
  assert.equal((await tab.waitFor(isDone('r2'), 30000)).outcome, 'completed');
  stored = await getMessages(url, AGENT, 'customer-1');
  const pending = toolPart(stored.at(-1), 'refund');
  assert.equal(pending.state, 'approval-requested', 'the refund does not run before it is approved');

  tab.send({ type: 'cf_agent_tool_approval', toolCallId: pending.toolCallId, approved: true, autoContinue: true });
  await tab.waitFor((f) => f?.type === 'cf_agent_use_chat_response' && f.done === true && f.continuation === true, 30000);
  stored = await getMessages(url, AGENT, 'customer-1');
  const refunded = stored.flatMap((m) => m.parts).find((p) => p.toolCallId === pending.toolCallId);
  assert.equal(refunded.state, 'output-available');
  assert.deepEqual(refunded.output, { refunded: 'A-42' });
  await tab.close();
});

// Turn and tool hooks of an agent defined outside the crate (examples/support-agent), on workerd,
// driven by the real useAgentChat: its awaited `before_turn` reads the custom body a tab sends
// (French on request), its `before_tool_call` blocks a refund of an `X-` order so the model's next
// request carries the block message as the tool's result (no approval is asked), and its
// `on_chat_response` logs each ended turn, once stored, to the Worker's log.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getMessages } from '../support/harness.mjs';
import { EXAMPLE_AGENT, startExample } from '../support/example-agent.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';
import { waitUntil } from '../support/e2e.mjs';

const AGENT = EXAMPLE_AGENT;
const BLOCKED = 'Refunds of X- orders are made by our staff: ask the customer to call us.';

const textOf = (message) => message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

test('before_turn, before_tool_call and on_chat_response of an agent, seen through the real client', { timeout: 120000 }, async (t) => {
  const { url, model, logs } = await startExample(t);
  const tab = await mountAgentChat({ url, name: 'customer-x', agent: AGENT });
  t.after(() => tab.unmount());

  await tab.chat.sendMessage(
    { text: 'refund my order [tool:refund:{"order":"X-7"}]' },
    { body: { locale: 'fr' } },
  );
  const answer = await tab.waitFor((chat) => {
    const last = chat.messages.at(-1);
    return chat.status === 'ready' && last?.role === 'assistant' && textOf(last).includes('Tool results') && last;
  }, 30000);

  assert.equal(model.requests.length, 2, 'the blocked call settles at once and the model goes on');
  assert.match(model.requests[0].messages[0].content, /Answer in French\./, "before_turn read the tab's custom body");
  const toolMessage = model.requests[1].messages.find((m) => m.role === 'tool');
  assert.equal(toolMessage.content, BLOCKED, 'the model reads the block message as the result');
  assert.ok(textOf(answer).includes(`refund=${BLOCKED}`));

  const refund = answer.parts.find((p) => p.type === 'tool-refund');
  assert.equal(refund.state, 'output-error', 'the tab shows the call settled, not waiting for approval');
  assert.equal(refund.errorText, BLOCKED);
  const stored = await getMessages(url, AGENT, 'customer-x');
  const storedRefund = stored.at(-1).parts.find((p) => p.type === 'tool-refund');
  assert.equal(storedRefund.state, 'output-error');
  assert.equal(storedRefund.approval, undefined, 'no approval was asked');

  const line = await waitUntil(
    () => logs.find((l) => l.startsWith('chat response ')),
    { timeoutMs: 10000, what: 'the on_chat_response log line' },
  );
  const response = JSON.parse(line.slice('chat response '.length));
  assert.equal(response.outcome, 'completed');
  assert.equal(response.answerId, stored.at(-1).id, 'reported with the id of the stored answer');
  assert.deepEqual(response.messageIds, [stored[0].id]);
  // The next turn, without the body, is back to the agent's own prompt.
  await tab.chat.sendMessage({ text: 'thanks' });
  await tab.waitFor((chat) => chat.status === 'ready' && chat.messages.length === 4, 30000);
  assert.doesNotMatch(model.requests.at(-1).messages[0].content, /French/);
});

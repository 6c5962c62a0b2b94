// End-to-end on the real runtime: context blocks. The demo agent with DEMO_MEMORY=1 keeps a `memory`
// block; the scripted model writes it through the built-in `set_context` tool, the next step's
// request shows it after the system prompt, and after a restart of the runtime a new turn's request
// still shows it (the block is stored with the agent). A write over the block's size is the tool
// error the model reads, and the block keeps its text.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { userMessage, sendAndWait, getMessages } from '../support/harness.mjs';
import { workerFor, tab, rid } from '../support/e2e.mjs';

const systemOf = (request) => request.messages[0].content;

test('the model writes a context block with set_context; the next request and a new object after a restart show it', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, { bindings: { DEMO_MEMORY: '1' } });
  const room = 'memory-1';
  const c = await tab(w, room);
  const write = '[tool:set_context:{"name":"memory","text":"The user\'s cat is called Miso."}]';
  const first = await sendAndWait(c, rid(), [userMessage(rid('u'), `remember this ${write}`)], {}, 20000);
  assert.equal(first.done.outcome, 'completed');
  const [asked, answered] = w.model.requests;
  assert.ok(asked.tools.some((tool) => tool.function.name === 'set_context'), 'the tool is offered');
  assert.match(systemOf(asked), /<context_block name="memory"/);
  assert.doesNotMatch(systemOf(asked), /Miso/);
  assert.match(systemOf(answered), /The user's cat is called Miso\./, 'the next step shows the block');

  await w.restart();
  const d = await tab(w, room);
  const history = await getMessages(w.url, 'ChatAgent', room);
  const tooLong = `[tool:set_context:{"name":"memory","text":"${'x'.repeat(2001)}"}]`;
  const second = await sendAndWait(d, rid(), [...history, userMessage(rid('u'), `what is my cat called? ${tooLong}`)], {}, 20000);
  assert.equal(second.done.outcome, 'completed');
  const after = w.model.requests.slice(2);
  assert.match(systemOf(after[0]), /The user's cat is called Miso\./, 'a new object after the restart shows the stored block');
  const result = after[1].messages.at(-1);
  assert.equal(result.role, 'tool');
  assert.match(result.content, /holds at most 2000 bytes/);
  assert.match(systemOf(after[1]), /The user's cat is called Miso\./, 'a refused write changed nothing');
});

// End-to-end with the REAL client library: `useAgentChat` (@cloudflare/think/react and
// agents/chat/react) over `useAgent`
// (agents/react), rendered by React 19's react-dom/client in Node (see
// tests/support/agent-chat-node.mjs), against the real built worker. Covers a plain turn seen by
// two tabs, the client-tool round trip (onToolCall + addToolOutput → automatic continuation), the
// approval round trip (addToolApprovalResponse), stop(), clearHistory(), a reload, a tab that
// opens while a reply is streaming, and tabs that reconnect while a reply cut by a restart of the
// runtime is being recovered (one assistant message at every render, its text ending complete).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getMessages } from '../support/harness.mjs';
import { workerFor, waitForModelRequests, toolMessages, offeredTools, toolPart } from '../support/e2e.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';

const AGENT = 'ChatAgent';

const textOfMessages = (messages) => messages
  .filter((m) => m.role === 'assistant')
  .flatMap((m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text))
  .join('');
const lastText = (chat) => {
  const last = chat.messages.at(-1);
  return last?.role === 'assistant' ? last.parts.filter((p) => p.type === 'text').map((p) => p.text).join('') : '';
};
/** Only the fields both sides keep (the AI SDK adds undefined-valued keys locally). */
const normalize = (messages) => JSON.parse(JSON.stringify(messages));

// Every test runs twice: with @cloudflare/think/react's useAgentChat (what a Think app uses) and
// with agents/chat/react's own (which also pushes its transcript to the server; ignored here).
for (const hook of ['think', 'agents']) describe(`with ${hook === 'think' ? '@cloudflare/think/react' : 'agents/chat/react'}`, () => {
  async function mount(t, w, name, chatOptions) {
    const tab = await mountAgentChat({ url: w.url, name, hook, chatOptions });
    t.after(() => tab.unmount());
    return tab;
  }

  test('a message sent with the real useAgentChat streams back and both tabs end with the same transcript as the server', async (t) => {
    const w = await workerFor(t);
    const room = 'rc-plain';
    const a = await mount(t, w, room);
    const b = await mount(t, w, room);
    // The hook probes on mount and is told the agent is idle.
    assert.ok(a.sent.some((f) => f.type === 'cf_agent_stream_resume_request'));
    await a.waitFor(() => a.frames.some((f) => f.type === 'cf_agent_stream_resume_none' && f.reason === 'idle'));

    await a.chat.sendMessage({ text: 'hello from the real client' });
    await a.waitFor((c) => c.status === 'ready' && lastText(c) === 'You said: hello from the real client');
    assert.deepEqual(a.chat.messages.map((m) => m.role), ['user', 'assistant']);
    assert.equal(a.chat.error, undefined);

    const server = await getMessages(w.url, AGENT, room);
    assert.deepEqual(a.chat.messages.map((m) => m.id), server.map((m) => m.id), 'the assistant id is the server id');
    await b.waitFor((c) => c.messages.length === 2 && lastText(c) === 'You said: hello from the real client');
    await b.settled();
    assert.deepEqual(normalize(b.chat.messages), server);
    assert.equal(b.chat.status, 'ready', 'the other tab never started a request of its own');
    assert.equal(b.sent.filter((f) => f.type === 'cf_agent_use_chat_request').length, 0);
    assert.deepEqual(a.errors, []);
    assert.deepEqual(b.errors, []);
  });

  test('a client tool round trip: onToolCall + addToolOutput send the result and the agent continues by itself', async (t) => {
    const w = await workerFor(t);
    const room = 'rc-client-tool';
    const calls = [];
    const tools = {
      getUserTimezone: {
        description: "The user's timezone.",
        parameters: { type: 'object', properties: {} },
        execute: async () => ({ timezone: 'Europe/Paris' }),
      },
    };
    const a = await mount(t, w, room, {
      tools,
      onToolCall: async ({ toolCall, addToolOutput }) => {
        calls.push(toolCall);
        addToolOutput({ toolCallId: toolCall.toolCallId, output: await tools[toolCall.toolName].execute(toolCall.input) });
      },
    });
    const b = await mount(t, w, room);

    await a.chat.sendMessage({ text: "what's my timezone? [delay:20]" });
    const expected = 'Tool results: getUserTimezone={"timezone":"Europe/Paris"}';
    await a.waitFor((c) => c.status === 'ready' && textOfMessages(c.messages) === expected);

    assert.equal(calls.length, 1, 'onToolCall ran once');
    assert.equal(calls[0].toolName, 'getUserTimezone');
    assert.deepEqual(calls[0].input, {});
    const [request] = a.sent.filter((f) => f.type === 'cf_agent_use_chat_request');
    assert.deepEqual(JSON.parse(request.init.body).clientTools, [{ name: 'getUserTimezone', description: "The user's timezone.", parameters: { type: 'object', properties: {} } }]);
    const results = a.sent.filter((f) => f.type === 'cf_agent_tool_result');
    assert.equal(results.length, 1);
    assert.equal(results[0].toolCallId, calls[0].toolCallId);
    assert.equal(results[0].autoContinue, true);
    // The hook attached to the continuation through the resume handshake.
    const ack = a.sent.find((f) => f.type === 'cf_agent_stream_resume_ack');
    assert.ok(ack, 'the hook ACKed the continuation stream');
    assert.ok(a.frames.some((f) => f.type === 'cf_agent_use_chat_response' && f.id === ack.id && f.continuation && f.done && f.outcome === 'completed'));

    const requests = await waitForModelRequests(w.model, 2);
    assert.equal(requests.length, 2, 'exactly one continuation');
    assert.ok(offeredTools(requests[0]).includes('getUserTimezone'));
    assert.deepEqual(JSON.parse(toolMessages(requests[1])[0].content), { timezone: 'Europe/Paris' });

    // The server keeps the continuation as its own assistant message (as Think does).
    const server = await getMessages(w.url, AGENT, room);
    assert.deepEqual(server.map((m) => m.role), ['user', 'assistant', 'assistant']);
    assert.equal(toolPart(server, calls[0].toolCallId).state, 'output-available');
    assert.equal(textOfMessages(server), expected);

    // Both tabs show the settled tool call and end with the continuation's answer. (The other tab
    // renders the continuation through the hook's observer path, which appends it to the tool
    // message and keeps it there after the end-of-turn transcript arrives; Think's frames produce
    // the same picture, so only the essentials are asserted for it.)
    for (const tab of [a, b]) {
      await tab.waitFor((c) => c.status === 'ready' && !c.isServerStreaming && lastText(c) === expected
        && toolPart(c.messages, calls[0].toolCallId)?.state === 'output-available');
      await tab.settled();
      assert.deepEqual(toolPart(tab.chat.messages, calls[0].toolCallId).output, { timezone: 'Europe/Paris' });
      assert.equal(tab.chat.messages.at(-1).id, server.at(-1).id, 'the last message is the persisted continuation');
    }
    // The tab that ran the tool (it followed the continuation through the resume handshake) ends
    // with exactly the server's transcript.
    assert.deepEqual(normalize(a.chat.messages), server);
    assert.deepEqual(a.errors, []);
    assert.deepEqual(b.errors, []);
  });

  test('an approval round trip: addToolApprovalResponse approves, the server runs the tool and the model continues', async (t) => {
    const w = await workerFor(t);
    const room = 'rc-approve';
    const a = await mount(t, w, room);
    const b = await mount(t, w, room);

    await a.chat.sendMessage({ text: 'delete notes.txt' });
    const pending = await a.waitFor((c) => c.status === 'ready' && c.messages.at(-1)?.parts.find((p) => p.state === 'approval-requested'));
    assert.equal(pending.type, 'tool-delete_file');
    assert.deepEqual(pending.input, { path: 'notes.txt' });
    assert.equal(w.model.requests.length, 1, 'nothing ran yet');
    await b.waitFor((c) => c.messages.at(-1)?.parts.some((p) => p.state === 'approval-requested'));

    a.chat.addToolApprovalResponse({ id: pending.approval.id, approved: true });
    const expected = 'Tool results: delete_file={"deleted":"notes.txt"}';
    await a.waitFor((c) => c.status === 'ready' && textOfMessages(c.messages) === expected);
    const approval = a.sent.find((f) => f.type === 'cf_agent_tool_approval');
    assert.deepEqual(approval, { type: 'cf_agent_tool_approval', toolCallId: pending.toolCallId, approved: true, autoContinue: true });

    const server = await getMessages(w.url, AGENT, room);
    assert.deepEqual(server.map((m) => m.role), ['user', 'assistant', 'assistant']);
    const settled = toolPart(server, pending.toolCallId);
    assert.equal(settled.state, 'output-available');
    assert.deepEqual(settled.output, { deleted: 'notes.txt' });
    assert.equal(textOfMessages(server), expected);
    for (const tab of [a, b]) {
      await tab.waitFor((c) => c.status === 'ready' && !c.isServerStreaming && lastText(c) === expected
        && toolPart(c.messages, pending.toolCallId)?.state === 'output-available');
      assert.deepEqual(toolPart(tab.chat.messages, pending.toolCallId).output, { deleted: 'notes.txt' });
    }
    assert.equal(w.model.requests.length, 2, 'the tool ran once and the model was asked once more');
    assert.deepEqual(a.errors, []);
  });

  test('a denial through addToolApprovalResponse never runs the tool and the model is told it was denied', async (t) => {
    const w = await workerFor(t);
    const room = 'rc-deny';
    const a = await mount(t, w, room);
    await a.chat.sendMessage({ text: 'delete important.txt' });
    const pending = await a.waitFor((c) => c.status === 'ready' && c.messages.at(-1)?.parts.find((p) => p.state === 'approval-requested'));
    a.chat.addToolApprovalResponse({ id: pending.approval.id, approved: false });
    await a.waitFor((c) => c.status === 'ready' && lastText(c) === 'Tool results: delete_file=Tool call execution denied.');
    assert.equal(toolPart(await getMessages(w.url, AGENT, room), pending.toolCallId).state, 'output-denied');
    await a.waitFor((c) => toolPart(c.messages, pending.toolCallId)?.state === 'output-denied');
    assert.equal(toolMessages(w.model.requests[1])[0].content, 'Tool call execution denied.');
  });

  test('stop() cancels the server turn and the partial answer is kept on both sides', async (t) => {
    const w = await workerFor(t);
    const room = 'rc-stop';
    const a = await mount(t, w, room);
    const sending = a.chat.sendMessage({ text: 'go on and on [tokens:200] [delay:20]' });
    await a.waitFor((c) => c.status === 'streaming' && lastText(c).includes('w3'));
    await a.chat.stop();
    await sending.catch(() => {});
    const cancel = a.sent.find((f) => f.type === 'cf_agent_chat_request_cancel');
    assert.ok(cancel, 'the hook sent a cancel frame');
    await a.waitFor(() => a.frames.some((f) => f.id === cancel.id && f.done && f.outcome === 'aborted'));
    const server = await getMessages(w.url, AGENT, room);
    assert.deepEqual(server.map((m) => m.role), ['user', 'assistant']);
    const partial = server[1].parts.find((p) => p.type === 'text').text;
    assert.ok(partial.startsWith('w1 w2 w3') && !partial.includes('w200'), partial);
    // The tab stopped applying chunks when the user pressed stop; the server may have streamed a
    // word or two more before the cancel arrived, and that is what it kept.
    const shown = await a.waitFor((c) => c.status === 'ready' && lastText(c));
    assert.ok(shown.startsWith('w1 w2 w3') && partial.startsWith(shown), `shown ${JSON.stringify(shown)} vs kept ${JSON.stringify(partial)}`);
    assert.equal(a.chat.messages.at(-1).id, server[1].id);
  });

  test('clearHistory() in one tab empties the other tab and the server', async (t) => {
    const w = await workerFor(t);
    const room = 'rc-clear';
    const a = await mount(t, w, room);
    const b = await mount(t, w, room);
    await a.chat.sendMessage({ text: 'something to forget' });
    await a.waitFor((c) => c.status === 'ready' && lastText(c) === 'You said: something to forget');
    await b.waitFor((c) => c.messages.length === 2 && !c.isServerStreaming);
    a.chat.clearHistory();
    assert.deepEqual(a.sent.at(-1), { type: 'cf_agent_chat_clear' });
    await b.waitFor((c) => c.messages.length === 0);
    await a.waitFor((c) => c.messages.length === 0);
    assert.deepEqual(await getMessages(w.url, AGENT, room), []);
    await b.settled();
    assert.equal(b.chat.messages.length, 0, 'stays empty');
  });

  test('a reloaded page shows the history (get-messages + connect snapshot) and can carry on', async (t) => {
    const w = await workerFor(t);
    const room = 'rc-reload';
    const a = await mount(t, w, room);
    await a.chat.sendMessage({ text: 'first' });
    await a.waitFor((c) => c.status === 'ready' && lastText(c) === 'You said: first');
    await a.unmount();

    const again = await mount(t, w, room);
    const server = await getMessages(w.url, AGENT, room);
    await again.waitFor((c) => c.messages.length === 2);
    assert.deepEqual(normalize(again.chat.messages), server);
    await again.chat.sendMessage({ text: 'second' });
    await again.waitFor((c) => c.status === 'ready' && lastText(c) === 'You said: second');
    assert.equal(again.chat.messages.length, 4);
    const body = w.model.requests.at(-1);
    assert.deepEqual(body.messages.filter((m) => m.role === 'user').map((m) => m.content), ['first', 'second']);
  });

  test('a tab opened while a reply streams follows the rest of it live and ends with the full answer once', async (t) => {
    const w = await workerFor(t);
    const room = 'rc-join';
    const a = await mount(t, w, room);
    a.chat.sendMessage({ text: 'count [tokens:40] [delay:25]' });
    await a.waitFor((c) => lastText(c).includes('w5 '));

    const b = await mount(t, w, room);
    assert.ok(b.frames.some((f) => f.type === 'cf_agent_stream_resuming'), 'offered the live stream');
    await b.waitFor(() => b.sent.some((f) => f.type === 'cf_agent_stream_resume_ack')); // the hook ACKs the offer
    await b.waitFor((c) => c.isServerStreaming || c.status === 'streaming');
    const full = Array.from({ length: 40 }, (_, i) => `w${i + 1}`).join(' ');
    await a.waitFor((c) => c.status === 'ready' && lastText(c) === full);
    await b.waitFor((c) => !c.isServerStreaming && c.status !== 'streaming' && textOfMessages(c.messages) === full);
    await b.settled();
    assert.equal(textOfMessages(b.chat.messages), full, 'no duplicated text');
    assert.deepEqual(b.chat.messages.map((m) => m.role), ['user', 'assistant']);
    assert.deepEqual(normalize(b.chat.messages), await getMessages(w.url, AGENT, room));
  });

  test('the runtime restarts mid-reply: a tab reconnecting by itself and a tab opened during the recovery each show one assistant message, ending complete', async (t) => {
    const w = await workerFor(t);
    const room = 'rc-restart';
    const a = await mount(t, w, room);
    const full = Array.from({ length: 120 }, (_, i) => `w${i + 1}`).join(' ');
    const shown = new Set(); // every assistant text a tab rendered
    const problems = [];
    const sample = (name) => (c) => {
      const assistants = c.messages.filter((m) => m.role === 'assistant');
      if (assistants.length > 1) problems.push(`${name} rendered ${assistants.length} assistant messages: ${JSON.stringify(assistants.map((m) => m.id))}`);
      const text = lastText(c);
      if (text) shown.add(text);
    };
    a.chat.sendMessage({ text: 'a long one [tokens:120] [delay:40]' });
    await a.waitFor((c) => { sample('a')(c); return lastText(c).includes('w30 '); });
    await w.restart(); // the socket drops; the hook reconnects on its own
    // A page opened now wakes the agent, whose recovery then runs while this tab follows it.
    const b = await mount(t, w, room);
    assert.ok(b.frames.some((f) => f.type === 'cf_agent_chat_recovering' && f.recovering === true), 'b joined during the recovery');
    const offer = b.frames.find((f) => f.type === 'cf_agent_stream_resuming');
    assert.ok(offer, 'b is offered a stream');
    let recovering = false;
    const end = (name, tab) => tab.waitFor((c) => {
      sample(name)(c);
      recovering ||= c.isRecovering === true;
      return c.status === 'ready' && !c.isServerStreaming && !c.isRecovering && textOfMessages(c.messages) === full;
    }, 30000);
    await Promise.all([end('a', a), end('b', b)]);
    await a.settled();
    await b.settled();
    assert.deepEqual(problems, [], 'one assistant message for one answer, at every render');
    assert.ok(recovering, 'the recovery was shown while it ran');
    assert.ok(b.sent.some((f) => f.type === 'cf_agent_stream_resume_ack' && f.id === offer.id), 'b followed the cut stream');
    for (const text of shown) assert.ok(full.startsWith(text), `a rendered text is not a prefix of the answer: ${JSON.stringify(text)}`);
    const server = await getMessages(w.url, AGENT, room);
    for (const tab of [a, b]) {
      assert.equal(textOfMessages(tab.chat.messages), full, 'the answer once');
      assert.deepEqual(normalize(tab.chat.messages), server);
    }
  });
});

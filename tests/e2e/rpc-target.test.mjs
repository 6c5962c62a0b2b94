// The Rust agent as a Durable Object RPC target: a real @cloudflare/think coordinator in the same
// Miniflare session calls `chat()` on the agent's stub with the sub-agent code of the Think
// documentation (text, a client tool its `onClientToolCall` runs, an executor that throws, a
// signal that aborts, the child evicted mid-call), the durable submissions and the message methods
// round-trip over RPC, and the internal fetch paths are closed to every request. Messages holding
// too many JSON values are refused over RPC and by the submission API before they are built.
// `destroy()` called over RPC erases the agent: its tabs are closed and no row of it is left.
// Runs on the test build (`bash scripts/build.sh --test`: the eviction route).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, getMessages, sendAndWait, userMessage } from '../support/harness.mjs';
import { startWithCoordinator } from '../support/think-coordinator.mjs';

let s;
before(async () => { s = await startWithCoordinator(); });
after(async () => { await s?.close(); });

const deltas = (events) => events.filter((e) => e.type === 'text-delta').map((e) => e.delta).join('');
const toolParts = (messages) => messages.flatMap((m) => m.parts.filter((p) => p.type.startsWith('tool-')));
const call = (child, method, ...args) => s.coordinator('rpc-calls', 'call', { child, method, args });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('plain text: the stream reaches the callback in order and onDone ends it', async () => {
  const r = await s.coordinator('c-text', 'delegate', { child: 'rpc-text', message: 'hello over rpc' });
  assert.equal(r.threw, null);
  assert.deepEqual(r.errors, []);
  assert.equal(r.done, 1);
  assert.match(r.requestId, /^[0-9a-f-]{36}$/, 'onStart came first with the request id');
  assert.equal(r.events[0].type, 'start');
  assert.equal(deltas(r.events), 'You said: hello over rpc');
  assert.equal(r.events.at(-1).type, 'finish');
  const child = await getMessages(s.url, 'ChatAgent', 'rpc-text');
  assert.deepEqual(child.map((m) => m.role), ['user', 'assistant']);
  assert.equal(child[0].parts[0].text, 'hello over rpc');
});

test('a client tool run by onClientToolCall continues the turn inside the same call', async () => {
  const r = await s.coordinator('c-tool', 'delegate', { child: 'rpc-tool', message: 'my timezone? [tool:get_user_timezone:{}]' });
  assert.equal(r.threw, null);
  assert.equal(r.done, 1);
  assert.deepEqual(r.toolCalls, [{ toolName: 'get_user_timezone', input: {} }]);
  const output = r.events.find((e) => e.type === 'tool-output-available');
  assert.deepEqual(output.output, { timezone: 'Europe/Paris', asked: 'get_user_timezone' });
  assert.match(deltas(r.events), /get_user_timezone=\{"timezone":"Europe\/Paris"/, 'the model read the result and went on');
  const [part] = toolParts(await getMessages(s.url, 'ChatAgent', 'rpc-tool'));
  assert.equal(part.type, 'tool-get_user_timezone');
  assert.equal(part.state, 'output-available');
});

test('an executor that throws becomes an output-error the model reads, and the turn completes', async () => {
  const r = await s.coordinator('c-throw', 'delegate', { child: 'rpc-throw', message: 'my timezone? [tool:get_user_timezone:{}]', tool: 'throw' });
  assert.equal(r.threw, null);
  assert.equal(r.done, 1);
  const failed = r.events.find((e) => e.type === 'tool-output-error');
  assert.match(failed.errorText, /the coordinator cannot read the timezone/);
  assert.match(deltas(r.events), /cannot read the timezone/);
  const [part] = toolParts(await getMessages(s.url, 'ChatAgent', 'rpc-throw'));
  assert.equal(part.state, 'output-error');
});

test('the signal aborting cancels the turn: neither onDone nor onError, and the turn ends aborted', async () => {
  const tab = await connect(s.url, 'ChatAgent', 'rpc-abort');
  const r = await s.coordinator('c-abort', 'delegate', { child: 'rpc-abort', message: '[hang] a long answer', abortAfterEvents: 3 });
  assert.equal(r.threw, null);
  assert.equal(r.done, 0);
  assert.deepEqual(r.errors, []);
  assert.ok(r.ms < 10000, `the call returned once aborted (${r.ms} ms)`);
  const end = await tab.waitFor((f) => f.type === 'cf_agent_use_chat_response' && f.id === r.requestId && f.done, 5000);
  assert.equal(end.outcome, 'aborted');
  await tab.close();
});

test('cancelChat(requestId) from another call cancels a running chat()', async () => {
  const tab = await connect(s.url, 'ChatAgent', 'rpc-cancel');
  const running = s.coordinator('c-cancel', 'delegate', { child: 'rpc-cancel', message: '[hang] wait for the cancel' });
  const start = await tab.waitFor((f) => f.type === 'cf_agent_use_chat_response' && !f.done, 10000);
  await call('rpc-cancel', 'cancelChat', start.id);
  const r = await running;
  assert.equal(r.requestId, start.id);
  assert.equal(r.done, 0);
  const end = await tab.waitFor((f) => f.type === 'cf_agent_use_chat_response' && f.id === start.id && f.done, 5000);
  assert.equal(end.outcome, 'aborted');
  await tab.close();
});

test('the child evicted mid-call: the call fails instead of hanging, and the child answers again', async () => {
  const tab = await connect(s.url, 'ChatAgent', 'rpc-evict');
  const running = s.coordinator('c-evict', 'delegate', { child: 'rpc-evict', message: '[hang] evict me' });
  await tab.waitFor((f) => f.type === 'cf_agent_use_chat_response' && !f.done && JSON.parse(f.body).type === 'text-delta', 10000);
  const evicted = await fetch(`${s.url}/agents/chat-agent/rpc-evict/__debug/evict`, { method: 'POST' });
  assert.equal(evicted.status, 200);
  const r = await running;
  assert.equal(r.done, 0);
  assert.ok(r.threw, `chat() rejected: ${JSON.stringify(r)}`);
  assert.ok(r.ms < 15000);
  // The reset object comes back on the next request that reaches it.
  let child;
  for (let i = 0; i < 20 && !child; i++) {
    child = await getMessages(s.url, 'ChatAgent', 'rpc-evict').catch(() => sleep(200));
  }
  assert.equal(child[0].parts[0].text, '[hang] evict me', 'the restarted child kept the message');
  const again = await s.coordinator('c-evict', 'delegate', { child: 'rpc-evict-2', message: 'after the eviction' });
  assert.equal(again.done, 1, 'the agents still answer over RPC');
});

test('submissions round-trip over RPC with Think\'s shapes', async () => {
  const first = (await call('rpc-sub', 'submitMessages', [userMessage('s-1', 'submitted over rpc')], { idempotencyKey: 'k-1' })).result;
  assert.equal(first.accepted, true);
  assert.match(first.status, /^(pending|running)$/);
  const again = (await call('rpc-sub', 'submitMessages', [userMessage('s-1', 'submitted over rpc')], { idempotencyKey: 'k-1' })).result;
  assert.equal(again.accepted, false);
  assert.equal(again.submissionId, first.submissionId);
  let seen;
  for (let i = 0; i < 100; i++) {
    seen = (await call('rpc-sub', 'inspectSubmission', first.submissionId)).result;
    if (seen.status === 'completed') break;
    await sleep(100);
  }
  assert.equal(seen.status, 'completed');
  assert.equal(seen.idempotencyKey, 'k-1');
  assert.ok(seen.messageId);
  const messages = (await call('rpc-sub', 'getMessages')).result;
  assert.equal(messages.find((m) => m.id === seen.messageId).parts.find((p) => p.type === 'text').text, 'You said: submitted over rpc');
  assert.equal((await call('rpc-sub', 'inspectSubmission', 'no-such-id')).result, null);
  assert.deepEqual((await call('rpc-sub', 'cancelSubmission', 'no-such-id')).result, { outcome: 'not_found', submissionId: 'no-such-id' });
  assert.equal((await call('rpc-sub', 'cancelSubmission', first.submissionId)).result.outcome, 'already_terminal');

  const slow = (await call('rpc-sub', 'submitMessages', [userMessage('s-2', '[hang] slow submission')], {})).result;
  await sleep(300);
  const cancelled = (await call('rpc-sub', 'cancelSubmission', slow.submissionId)).result;
  assert.equal(cancelled.outcome, 'cancelled');
  assert.match(cancelled.previousStatus, /^(pending|running)$/);
  assert.equal(cancelled.submission.status, 'aborted');
  const refused = await call('rpc-sub', 'submitMessages', 'not a list');
  assert.match(refused.threw, /submitMessages: messages/);
});

test('addMessages stores without a turn; saveMessages and continueLastTurn resolve after theirs; clearMessages empties', async () => {
  await call('rpc-msgs', 'addMessages', [userMessage('a-1', 'added, not answered')]);
  await sleep(500);
  let messages = (await call('rpc-msgs', 'getMessages')).result;
  assert.deepEqual(messages.map((m) => m.id), ['a-1'], 'stored, and no turn answered it');
  const saved = (await call('rpc-msgs', 'saveMessages', [userMessage('a-2', 'saved and answered')])).result;
  assert.equal(saved.status, 'completed');
  messages = (await call('rpc-msgs', 'getMessages')).result;
  assert.equal(messages.length, 3);
  assert.equal(messages.at(-1).role, 'assistant');
  const continued = (await call('rpc-msgs', 'continueLastTurn')).result;
  assert.equal(continued.status, 'completed');
  assert.match(continued.requestId, /\S/);
  await call('rpc-msgs', 'clearMessages');
  assert.deepEqual((await call('rpc-msgs', 'getMessages')).result, []);
});

test('destroy() over RPC erases the agent: its tab is closed and no row of it is left', { timeout: 30000 }, async () => {
  const child = 'rpc-destroy';
  const rows = async () => {
    const r = await fetch(`${s.url}/agents/chat-agent/${child}/__debug/storage-rows`);
    return r.ok ? r.json() : null;
  };
  const tab = await connect(s.url, 'ChatAgent', child);
  await tab.waitFor('cf_agent_mcp_servers');
  await sendAndWait(tab, 'd1', [userMessage('dm1', 'forget me')], {}, 15000);
  assert.equal((await getMessages(s.url, 'ChatAgent', child)).length, 2);
  assert.ok((await rows()).tables.chat_messages > 0, 'the conversation is stored before');

  const erased = await call(child, 'destroy');
  assert.equal(erased.threw, undefined, `destroy() answered: ${JSON.stringify(erased)}`);
  assert.equal(erased.result, null);
  assert.deepEqual(await tab.waitForClose(), { code: 4410, reason: 'agent destroyed' });

  let after = null;
  for (let i = 0; i < 100 && !after; i += 1) {
    after = await rows();
    if (!after) await sleep(100);
  }
  const left = Object.entries(after.tables).filter(([name, n]) => n > 0 && name !== 'chat_meta');
  assert.deepEqual(left, [], `no row is left: ${JSON.stringify(after.tables)}`);
  assert.equal(after.alarm, null);
  assert.deepEqual(await getMessages(s.url, 'ChatAgent', child), []);
  assert.deepEqual((await call(child, 'getMessages')).result, [], 'a later call reaches a new, empty agent');
});

test('no request reaches the internal paths: not from outside, not from inside the deployment', async () => {
  const credential = 'secret:test-channel-secret';
  const submit = { op: 'submit', messages: [userMessage('x-1', 'forged')] };
  for (const path of ['__chat-api', '__chat-channel']) {
    const outside = await fetch(`${s.url}/agents/chat-agent/rpc-closed/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-durable-chat-channel': credential },
      body: JSON.stringify(submit),
    });
    assert.notEqual(outside.status, 200, `${path} from outside`);
    const inside = await s.coordinator('c-closed', 'internal-fetch', { child: 'rpc-closed', path, credential, call: submit });
    assert.equal(inside.status, 404, `${path} from a Worker holding the credential: ${inside.text}`);
  }
  assert.deepEqual(await getMessages(s.url, 'ChatAgent', 'rpc-closed'), []);
});

test('INTERNAL_FETCH_FALLBACK=1 serves the submission API again (the switch the previous test relies on)', async () => {
  const fallback = await startWithCoordinator({ bindings: { INTERNAL_FETCH_FALLBACK: '1' } });
  try {
    const submit = { op: 'submit', messages: [userMessage('f-1', 'through the fallback')] };
    const inside = await fallback.coordinator('c-open', 'internal-fetch', { child: 'rpc-open', path: '__chat-api', credential: 'secret:test-channel-secret', call: submit });
    assert.equal(inside.status, 200, inside.text);
    // A call holding too many JSON values is refused with 413 before it is built.
    const zeros = { id: 'f-2', role: 'user', parts: [{ type: 'text', text: 'zeros' }, { type: 'data-junk', data: new Array(400_000).fill(0) }] };
    const crowded = { op: 'submit', messages: [zeros] };
    const refused = await fallback.coordinator('c-open', 'internal-fetch', { child: 'rpc-open', path: '__chat-api', credential: 'secret:test-channel-secret', call: crowded });
    assert.equal(refused.status, 413, refused.text);
    assert.deepEqual(JSON.parse(refused.text), { error: 'call refused: call body: too many JSON values (limit 300000)' });
  } finally {
    await fallback.close();
  }
});

test('submitMessages, saveMessages and addMessages refuse messages holding too many JSON values before building them', async () => {
  const zeros = { id: 'z-1', role: 'user', parts: [{ type: 'text', text: 'zeros' }, { type: 'data-junk', data: new Array(400_000).fill(0) }] };
  for (const method of ['submitMessages', 'saveMessages', 'addMessages']) {
    const r = await call('rpc-values', method, [zeros], {});
    assert.equal(r.threw, `${method}: messages: too many JSON values (limit 300000)`);
  }
  assert.deepEqual((await call('rpc-values', 'getMessages')).result, [], 'nothing stored');
  const ok = (await call('rpc-values', 'submitMessages', [userMessage('v-1', 'a normal one')], {})).result;
  assert.equal(ok.accepted, true);
});

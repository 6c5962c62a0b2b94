// The Rust agent's RPC surface beyond `chat()`, called by a real @cloudflare/think coordinator over
// Durable Object RPC (the bridge class the build generates): the author's own methods (an RPC-only
// one and a callable marked for RPC), `runTurn` in its three modes, `waitForSubmission`,
// `listSubmissions`, `deleteSubmission(s)`, `cancelAllChats`, and the edges of Think's shapes:
// `chat()` with several messages, `saveMessages`' signal, `addMessages`' `parentId` / `mode`, and
// two submits with one idempotency key at the same moment. Runs on the test build
// (`bash scripts/build.sh --test`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, getMessages, userMessage } from '../support/harness.mjs';
import { startWithCoordinator } from '../support/think-coordinator.mjs';

let s;
before(async () => { s = await startWithCoordinator(); });
after(async () => { await s?.close(); });

const call = (child, method, ...args) => s.coordinator('rpc-calls', 'call', { child, method, args });
const result = async (child, method, ...args) => {
  const r = await call(child, method, ...args);
  assert.equal(r.threw, undefined, `${method} threw: ${r.threw}`);
  return r.result;
};
const deltas = (events) => events.filter((e) => e.type === 'text-delta').map((e) => e.delta).join('');
const textOf = (message) => message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

test("the author's own methods are called on the stub; a tab sees their effect", async () => {
  const tab = await connect(s.url, 'ChatAgent', 'rpc-own');
  const state = await result('rpc-own', 'setStateField', 'topic', 'rust');
  assert.deepEqual(state, { topic: 'rust' });
  const seen = await tab.waitFor((f) => f.type === 'cf_agent_state' && f.state?.topic === 'rust', 5000);
  assert.deepEqual(seen.state, { topic: 'rust' });
  assert.equal(await result('rpc-own', 'stateField', 'topic'), 'rust');
  assert.equal(await result('rpc-own', 'stateField', 'unset'), null);
  const bad = await call('rpc-own', 'stateField', 42);
  assert.match(bad.threw, /Invalid arguments for method stateField/);
  // A streaming callable and a tab-only callable are not on the stub.
  for (const method of ['ticks', 'echo']) {
    const missing = await call('rpc-own', method, 1);
    assert.ok(missing.threw, `${method} is not an RPC method`);
  }
  await tab.close();
});

test('runTurn waits for the turn and hands back the stored answer; submit and stream modes', async () => {
  const waited = await result('rpc-run', 'runTurn', { input: 'run me' });
  assert.equal(waited.status, 'completed');
  assert.equal(waited.continuation, false);
  assert.equal(textOf(waited.message), 'You said: run me');
  const stored = await getMessages(s.url, 'ChatAgent', 'rpc-run');
  assert.equal(stored.at(-1).id, waited.message.id);
  const continued = await result('rpc-run', 'runTurn', { continuation: true });
  assert.equal(continued.status, 'completed');
  assert.equal(continued.continuation, true);
  assert.deepEqual(await result('rpc-run', 'runTurn', { input: '' }), { requestId: '', status: 'skipped', continuation: false });
  for (const [options, error] of [
    [{}, /supply either input or continuation/],
    [{ input: 'x', continuation: true }, /not both/],
    [{ mode: 'later', input: 'x' }, /mode must be/],
    [{ mode: 'stream', input: 'x' }, /requires callback/],
  ]) {
    assert.match((await call('rpc-run', 'runTurn', options)).threw, error);
  }
  const submitted = await result('rpc-run', 'runTurn', { mode: 'submit', input: 'queued turn', idempotencyKey: 'run-k' });
  assert.equal(submitted.accepted, true);
  const ended = await result('rpc-run', 'waitForSubmission', submitted.submissionId);
  assert.equal(ended.status, 'completed');
  assert.ok(ended.messageId);
  const streamed = await s.coordinator('c-stream', 'run-turn-stream', { child: 'rpc-run-stream', input: 'stream it' });
  assert.equal(streamed.threw, null);
  assert.equal(streamed.done, 1);
  assert.equal(deltas(streamed.events), 'You said: stream it');
});

test('submissions are listed newest first, waited on with a timeout, deleted one by one or by date', async () => {
  const a = await result('rpc-list', 'submitMessages', [userMessage('l-1', 'first')], {});
  assert.equal((await result('rpc-list', 'waitForSubmission', a.submissionId)).status, 'completed');
  const b = await result('rpc-list', 'submitMessages', [userMessage('l-2', 'second')], {});
  assert.equal((await result('rpc-list', 'waitForSubmission', b.submissionId)).status, 'completed');
  const listed = await result('rpc-list', 'listSubmissions');
  assert.deepEqual(listed.map((x) => x.submissionId), [b.submissionId, a.submissionId]);
  assert.deepEqual(await result('rpc-list', 'listSubmissions', { status: 'error' }), []);
  assert.equal((await result('rpc-list', 'listSubmissions', { status: ['completed'], limit: 1 })).length, 1);
  assert.match((await call('rpc-list', 'listSubmissions', { status: 'paused' })).threw, /unknown status/);

  const hanging = await result('rpc-list', 'submitMessages', [userMessage('l-3', '[hang] never ends')], {});
  const meanwhile = await result('rpc-list', 'waitForSubmission', hanging.submissionId, { timeoutMs: 300 });
  assert.match(meanwhile.status, /^(pending|running)$/, 'the timeout answered with where it stands');
  assert.equal(await result('rpc-list', 'deleteSubmission', hanging.submissionId), false, 'a running one stays');
  await result('rpc-list', 'cancelAllChats');
  assert.equal((await result('rpc-list', 'waitForSubmission', hanging.submissionId)).status, 'aborted');

  assert.equal(await result('rpc-list', 'deleteSubmission', a.submissionId), true);
  assert.equal(await result('rpc-list', 'deleteSubmission', a.submissionId), false);
  assert.equal(await result('rpc-list', 'inspectSubmission', a.submissionId), null);
  assert.equal(await result('rpc-list', 'waitForSubmission', a.submissionId), null);
  const old = await s.coordinator('c-del', 'delete-before', { child: 'rpc-list', before: Date.now() + 1000, options: { status: 'completed' } });
  assert.equal(old.result, 1, 'the other completed one');
  const left = await result('rpc-list', 'listSubmissions');
  assert.deepEqual(left.map((x) => x.status), ['aborted']);
});

test('chat() takes several messages: stored in order, answered by one turn', async () => {
  const messages = [userMessage('c-1', 'first of two'), userMessage('c-2', 'second of two')];
  const r = await s.coordinator('c-many', 'delegate', { child: 'rpc-many', message: messages });
  assert.equal(r.threw, null);
  assert.equal(r.done, 1);
  const stored = await getMessages(s.url, 'ChatAgent', 'rpc-many');
  assert.deepEqual(stored.map((m) => m.id).slice(0, 2), ['c-1', 'c-2']);
  assert.deepEqual(stored.map((m) => m.role), ['user', 'user', 'assistant']);
  assert.equal(textOf(stored[2]), 'You said: second of two');
});

test("saveMessages' signal aborting ends its turn aborted and the call returns", async () => {
  const r = await s.coordinator('c-save', 'save-abort', { child: 'rpc-save-abort', messages: [userMessage('sa-1', '[hang] abort me')], abortAfterMs: 500 });
  assert.equal(r.result.status, 'aborted');
  const stored = await getMessages(s.url, 'ChatAgent', 'rpc-save-abort');
  assert.equal(stored[0].id, 'sa-1', 'the message is kept');
});

test('two submits with one idempotency key at the same moment: one is accepted, both name it', async () => {
  const keys = Array.from({ length: 20 }, (_, i) => `same-k-${i}`);
  const r = await s.coordinator('c-twice', 'submit-twice', { child: 'rpc-twice', keys, messages: [userMessage('t-1', 'once')] });
  for (let i = 0; i < keys.length; i++) {
    const [first, second] = r.result.slice(2 * i, 2 * i + 2);
    assert.equal(first.submissionId, second.submissionId);
    assert.deepEqual([first.accepted, second.accepted], [true, false], keys[i]);
  }
});

test("addMessages: append keeps a stored id as it is, upsert replaces it, parentId must be the last message", async () => {
  await result('rpc-add', 'addMessages', [userMessage('p-1', 'one'), userMessage('p-2', 'two')]);
  await result('rpc-add', 'addMessages', [userMessage('p-1', 'changed?')]);
  let stored = await result('rpc-add', 'getMessages');
  assert.deepEqual(stored.map(textOf), ['one', 'two'], 'append is idempotent by id');
  await result('rpc-add', 'addMessages', [userMessage('p-1', 'changed')], { mode: 'upsert' });
  stored = await result('rpc-add', 'getMessages');
  assert.deepEqual(stored.map(textOf), ['changed', 'two']);
  await result('rpc-add', 'addMessages', [userMessage('p-3', 'three')], { parentId: 'p-2' });
  assert.match((await call('rpc-add', 'addMessages', [userMessage('p-4', 'x')], { parentId: 'nope' })).threw, /parentId "nope" does not exist/);
  assert.match((await call('rpc-add', 'addMessages', [userMessage('p-4', 'x')], { parentId: 'p-1' })).threw, /not the last message/);
  assert.match((await call('rpc-add', 'addMessages', [userMessage('p-4', 'x')], { parentId: null })).threw, /linear conversation/);
  assert.match((await call('rpc-add', 'addMessages', [userMessage('p-4', 'x')], { mode: 'merge' })).threw, /mode must be/);
  stored = await result('rpc-add', 'getMessages');
  assert.deepEqual(stored.map((m) => m.id), ['p-1', 'p-2', 'p-3'], 'nothing refused was stored');
});

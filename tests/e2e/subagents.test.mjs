// Sub-agents end to end: the Coordinator demo class delegates to a ChatAgent over Durable Object
// RPC, executing the child's client tools itself; plus the child's side of the older fetch
// channel (served with the fallback switch) driven directly (no executor, abort), and a tab on the
// child watching.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startWorker, connect, chatRequest, userMessage, getMessages, DEFAULT_BINDINGS } from '../support/harness.mjs';

let w;
// Some tests drive the agent's older internal fetch paths (channel / submission API) directly:
// the agent serves them only with the fallback switch.
before(async () => { w = await startWorker({ bindings: { INTERNAL_FETCH_FALLBACK: '1' } }); });
after(async () => { await w?.close(); });

const isDoneFor = (id) => (f) => f.type === 'cf_agent_use_chat_response' && f.id === id && f.done;
const toolParts = (messages) => messages.flatMap((m) => m.parts.filter((p) => p.type.startsWith('tool-')));

async function delegate(name, id, text) {
  const tab = await connect(w.url, 'Coordinator', name);
  tab.send(chatRequest(id, [userMessage(`u-${id}`, text)]));
  const done = await tab.waitFor(isDoneFor(id), 20000);
  await tab.close();
  return done;
}

test('a client tool executed by the parent reaches the child model and the delegated turn finishes in one call', async () => {
  const done = await delegate('coord-clock', 'c1', 'delegate kid-clock: read the clock');
  assert.equal(done.outcome, 'completed');
  const [delegated] = toolParts(await getMessages(w.url, 'Coordinator', 'coord-clock'));
  assert.equal(delegated.type, 'tool-delegate');
  assert.equal(delegated.state, 'output-available');
  assert.match(delegated.output.text, /parent_clock=.*"by":"coordinator"/);
  const child = await getMessages(w.url, 'ChatAgent', 'kid-clock');
  const [clock] = toolParts(child);
  assert.equal(clock.type, 'tool-parent_clock');
  assert.equal(clock.state, 'output-available');
  assert.equal(clock.output.by, 'coordinator');
  assert.match(clock.output.now, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
  const childText = child.at(-1).parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  assert.match(childText, /parent_clock=/, 'the child model received the executor output and went on');
});

test('an executor that fails becomes an output-error the child model reads, and the turn completes', async () => {
  const done = await delegate('coord-fail', 'c2', 'delegate kid-fail: please fail');
  assert.equal(done.outcome, 'completed');
  const [failed] = toolParts(await getMessages(w.url, 'ChatAgent', 'kid-fail'));
  assert.equal(failed.type, 'tool-parent_fail');
  assert.equal(failed.state, 'output-error');
  assert.equal(failed.errorText, 'the coordinator refused');
  const [delegated] = toolParts(await getMessages(w.url, 'Coordinator', 'coord-fail'));
  assert.match(delegated.output.text, /the coordinator refused/);
});

test('a tab connected to the child sees the delegated turn live under a server-minted request id', async () => {
  const watcher = await connect(w.url, 'ChatAgent', 'kid-watched');
  await delegate('coord-watch', 'c3', 'delegate kid-watched: hello there');
  const chunks = watcher.frames.filter((f) => f.type === 'cf_agent_use_chat_response' && !f.done);
  assert.ok(chunks.length > 3, 'chunks were broadcast to the child tab');
  const ids = new Set(chunks.map((f) => f.id));
  assert.equal(ids.size, 1);
  assert.match([...ids][0], /^[0-9a-f-]{36}$/, 'the request id is minted by the child');
  const text = chunks.map((f) => JSON.parse(f.body)).filter((c) => c.type === 'text-delta').map((c) => c.delta).join('');
  assert.equal(text, 'You said: hello there');
  assert.ok(watcher.frames.some((f) => f.type === 'cf_agent_chat_messages' && f.messages.some((m) => m.role === 'user' && m.parts[0].text === 'hello there')));
});

/** Opens the child's side of the channel straight on the Durable Object, as a parent agent does
 * (the worker refuses the channel path from outside), with the credential a parent sends: the
 * deployment's CHANNEL_SECRET. */
async function openChannel(name) {
  const ns = await w.mf.getDurableObjectNamespace('ChatAgent');
  const id = ns.idFromName(name);
  const stub = ns.get(id);
  const res = await stub.fetch(`https://agent/agents/chat-agent/${name}/__chat-channel`, {
    headers: { Upgrade: 'websocket', 'x-durable-chat-channel': `secret:${DEFAULT_BINDINGS.CHANNEL_SECRET}` },
  });
  const ws = res.webSocket;
  assert.ok(ws, 'the child accepted the channel');
  ws.accept();
  const frames = [];
  const waiters = [];
  ws.addEventListener('message', (event) => {
    const frame = JSON.parse(String(event.data));
    frames.push(frame);
    for (const waiter of [...waiters]) if (waiter.pred(frame)) { waiters.splice(waiters.indexOf(waiter), 1); waiter.resolve(frame); }
  });
  const waitFor = (pred, ms = 10000) => new Promise((resolve, reject) => {
    const hit = frames.find(pred);
    if (hit) return resolve(hit);
    const timer = setTimeout(() => reject(new Error('timeout waiting on the channel')), ms);
    waiters.push({ pred, resolve: (f) => { clearTimeout(timer); resolve(f); } });
  });
  return { ws, frames, waitFor, send: (o) => ws.send(JSON.stringify(o)) };
}

test('the channel endpoint is not reachable through the worker', async () => {
  const ws = new WebSocket(`${w.url.replace('http', 'ws')}/agents/chat-agent/kid-x/__chat-channel`);
  const status = await new Promise((resolve) => {
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode));
    ws.on('open', () => resolve('open'));
    ws.on('error', () => {});
  });
  assert.equal(status, 403);
});

const clockTool = [{ name: 'parent_clock', description: 'time', parameters: { type: 'object', properties: {} } }];

test('without an executor the client call surfaces as an event and the turn ends with a dangling input-available part', async () => {
  const channel = await openChannel('kid-dangling');
  channel.send({ type: 'cf_agent_rpc_chat', message: 'read the clock', clientTools: clockTool, executor: false });
  const started = await channel.waitFor((f) => f.type === 'cf_agent_rpc_started');
  const done = await channel.waitFor(isDoneFor(started.requestId));
  assert.equal(done.outcome, 'completed');
  assert.ok(!channel.frames.some((f) => f.type === 'cf_agent_rpc_tool_call'), 'nothing was sent to execute');
  const events = channel.frames.filter((f) => f.id === started.requestId && !f.done).map((f) => JSON.parse(f.body));
  assert.ok(events.some((c) => c.type === 'tool-input-available' && c.toolName === 'parent_clock'));
  const [dangling] = toolParts(await getMessages(w.url, 'ChatAgent', 'kid-dangling'));
  assert.equal(dangling.state, 'input-available');
  channel.ws.close();
});

test('per-call client tools are never persisted: the next tab turn does not offer them', async () => {
  const tab = await connect(w.url, 'ChatAgent', 'kid-dangling');
  tab.send(chatRequest('after', [userMessage('u-after', 'anything else')]));
  await tab.waitFor(isDoneFor('after'), 10000);
  const last = w.model.requests.at(-1);
  const offered = (last.tools ?? []).map((t) => t.function.name);
  assert.ok(!offered.includes('parent_clock'), `offered: ${offered}`);
  await tab.close();
});

test('abort through the channel stops the child loop and the turn ends aborted', async () => {
  const channel = await openChannel('kid-abort');
  channel.send({ type: 'cf_agent_rpc_chat', message: '[tokens:200] [delay:20]', clientTools: [], executor: false });
  const started = await channel.waitFor((f) => f.type === 'cf_agent_rpc_started');
  await channel.waitFor((f) => f.id === started.requestId && f.seq === 10);
  channel.send({ type: 'cf_agent_chat_request_cancel', id: started.requestId });
  const done = await channel.waitFor(isDoneFor(started.requestId));
  assert.equal(done.outcome, 'aborted');
  const messages = await getMessages(w.url, 'ChatAgent', 'kid-abort');
  assert.equal(messages.length, 2, 'the partial answer is kept');
  const words = messages[1].parts.filter((p) => p.type === 'text').map((p) => p.text).join('').trim().split(/\s+/);
  assert.ok(words.length < 200, `stopped early (${words.length} words)`);
  channel.ws.close();
});

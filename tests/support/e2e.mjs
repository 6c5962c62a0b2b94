// Shared helpers for the end-to-end suites in tests/e2e/: a per-test worker, request ids like the
// client's nanoid(8), response-frame filters, and waiting on the scripted model's request log.
// Owns: workerFor, rid, responsesOf, chunkFrames, typesOf, waitUntil, waitForModelRequests,
// modelTexts, toolMessages, offeredTools, probe, probeAnswer, followContinuation, toolPart, terminalOf,
// chatApi.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { connect, startWorker, isResponse, isDone, kebab, DEFAULT_BINDINGS } from './harness.mjs';

/** Start a fresh worker (own model server and storage) closed when test `t` ends. */
export async function workerFor(t, opts) {
  const w = await startWorker(opts);
  t.after(() => w.close());
  return w;
}

/**
 * A tab on `agent` (ChatAgent unless given) of a worker (`w` from workerFor, or its URL), resolved
 * once the connect frames are in (the MCP state is the last of them).
 */
export async function tab(worker, room, opts, agent = 'ChatAgent') {
  const c = await connect(typeof worker === 'string' ? worker : worker.url, agent, room, opts);
  await c.waitFor('cf_agent_mcp_servers');
  return c;
}

const ALPHABET = 'useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict';
/** A request/message id like the client's nanoid(8) (or `prefix-` + 8 chars). */
export function rid(prefix = '') {
  const bytes = randomBytes(8);
  let id = '';
  for (const b of bytes) id += ALPHABET[b & 63];
  return prefix ? `${prefix}-${id}` : id;
}

/** Every cf_agent_use_chat_response frame of request `id` among `frames`. */
export function responsesOf(frames, id) {
  return frames.filter(isResponse(id));
}

/** Non-terminal chunk frames (body is a JSON UIMessageChunk) of request `id`. */
export function chunkFrames(frames, id) {
  return responsesOf(frames, id).filter((f) => !f.done && !f.error && f.body !== '');
}

/** The chunk `type`s carried by the chunk frames of request `id`. */
export function typesOf(frames, id) {
  return chunkFrames(frames, id).map((f) => JSON.parse(f.body).type);
}

/** Index of the first frame matching `pred` (a predicate or a frame type), -1 if none. */
export function firstIndex(frames, pred) {
  const match = typeof pred === 'string' ? (f) => f?.type === pred : pred;
  return frames.findIndex(match);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `fn` until it returns a truthy value (returned); throws after timeoutMs. */
export async function waitUntil(fn, { timeoutMs = 10000, intervalMs = 10, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Wait until the scripted model has received at least `n` requests; returns model.requests. */
export function waitForModelRequests(model, n, timeoutMs = 10000) {
  return waitUntil(() => model.requests.length >= n && model.requests, {
    timeoutMs,
    what: `${n} model request(s) (have ${model.requests.length})`,
  });
}

/** Plain text of a chat-completions message content. */
export function contentText(content) {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? p : p?.text ?? '')).join('');
  return JSON.stringify(content);
}

/** Texts of the `role` messages of a model request body (default: user). */
export function modelTexts(body, role = 'user') {
  return (body?.messages ?? []).filter((m) => m.role === role).map((m) => contentText(m.content));
}

/** The `tool` messages of a model request body. */
export function toolMessages(body) {
  return (body?.messages ?? []).filter((m) => m.role === 'tool');
}

/** Names of the tools offered to the model in a request body. */
export function offeredTools(body) {
  return (body?.tools ?? []).map((t) => t?.function?.name ?? t?.name);
}

/** Send a resume probe like the client does on connect; returns the probe id. */
export function probe(client, probeId = rid()) {
  client.send({ type: 'cf_agent_stream_resume_request', probeId });
  return probeId;
}

/** Probe and return the direct answer (the frame echoing the probe id). */
export async function probeAnswer(client, timeoutMs) {
  const probeId = probe(client);
  return client.waitFor((f) => f.probeId === probeId, timeoutMs);
}

/**
 * What the hook does after sending an auto-continuing result or approval: probe, wait for the
 * continuation's offer when told it is pending, ACK it, and wait for its terminal frame.
 * Returns {id, end, resuming (the proactive offer, when the probe was answered pending), frames}.
 */
export async function followContinuation(client, { probeMs, turnMs }) {
  const mark = client.mark();
  const answer = await probeAnswer(client, probeMs);
  assert.ok(['cf_agent_stream_pending', 'cf_agent_stream_resuming'].includes(answer.type), `probe answered ${answer.type}`);
  const id = answer.id;
  let resuming;
  if (answer.type === 'cf_agent_stream_pending') {
    resuming = await client.waitFor((f) => f.type === 'cf_agent_stream_resuming' && f.id === id, turnMs);
  }
  client.send({ type: 'cf_agent_stream_resume_ack', id });
  const end = await client.waitFor(isDone(id), turnMs);
  return { id, end, resuming, frames: client.since(mark) };
}

/** The tool part with `toolCallId` in a UIMessage list (or undefined). */
export function toolPart(messages, toolCallId) {
  for (const m of messages) {
    for (const p of m.parts ?? []) if (p.toolCallId === toolCallId) return p;
  }
  return undefined;
}

/**
 * The terminal frame of request `id` received by `client`, waiting for it if needed. Unlike
 * client.waitFor it looks at every frame ever received (request ids are unique), so the order in
 * which several requests are awaited does not matter.
 */
export function terminalOf(client, id, timeoutMs = 20000) {
  const hit = client.frames.find(isDone(id));
  if (hit) return Promise.resolve(hit);
  const cursor = client.cursor;
  return client.waitFor(isDone(id), timeoutMs).finally(() => { client.cursor = cursor; });
}

/**
 * One call of an agent's internal submission API (`…/__chat-api`, what an `AgentStub` sends),
 * made straight on its Durable Object with the deployment's channel credential (the worker
 * refuses the path from outside). Returns `{status, body}` (body parsed when JSON).
 */
export async function chatApi(worker, room, call, { agent = 'ChatAgent', credential } = {}) {
  const ns = await worker.mf.getDurableObjectNamespace(agent);
  const id = ns.idFromName(room);
  const res = await ns.get(id).fetch(`https://agent/agents/${kebab(agent)}/${room}/__chat-api`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-durable-chat-channel': credential ?? `secret:${DEFAULT_BINDINGS.CHANNEL_SECRET}`,
    },
    body: typeof call === 'string' ? call : JSON.stringify(call),
  });
  const text = await res.text();
  let body = text;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body };
}

/**
 * Upgrades to `room`'s agent as a browser page of `origin` would (its `Origin` header); resolves
 * `{status: 101}` when accepted (the socket is closed at once) or the refusal's `{status, body}`.
 */
export function upgradeFrom(url, room, origin) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/agents/chat-agent/${room}?_pk=${rid()}`, { origin });
    ws.on('open', () => { ws.close(); resolve({ status: 101 }); });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    ws.on('error', () => {});
  });
}

/** The HTTP answer to a WebSocket upgrade that is refused: {status, body} (rejects if accepted). */
export function refusedUpgrade(url, room, query = '') {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/agents/chat-agent/${room}?_pk=${rid()}${query}`);
    ws.on('open', () => { ws.close(); reject(new Error('the upgrade was accepted')); });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    ws.on('error', () => {});
  });
}

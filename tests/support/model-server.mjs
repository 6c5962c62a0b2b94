// Scripted OpenAI-compatible model server for demos and end-to-end tests (Node http, no deps).
// Owns: POST /v1/chat/completions (streaming SSE `chat.completion.chunk`s or a plain JSON
// completion), the admin endpoints GET /__requests and POST /__reset, and the CLI
// `node tests/support/model-server.mjs [--port 8788] [--host 127.0.0.1]`.
// The reply is a pure function of the request's messages and tools (see `planReply` for the
// rules; a tool result over 64 KiB is echoed as `name=<N bytes>`), except `[http-once:NNN]`:
// the first request whose last user message carries it is answered with status NNN (and
// `retry-after-ms` when the message also has `[retry-after-ms:N]`), later ones normally; it
// exercises a client's retries. `[http-huge:NNN]` answers status NNN with a 20 MB error body.
// `[truncate-once]` likewise cuts the first reply to that message
// after two words (no finish, no [DONE]), as a dropped connection does. With `maxContextBytes`,
// a longer request is refused as OpenAI refuses one longer than the model's context.
// Optional prompt cache (`promptCache: true`, used by bench/cache.mjs): usage then counts the
// request body's bytes / 4 as prompt tokens and reports the part a prefix cache would have served
// as `prompt_tokens_details.cached_tokens` (see `PromptCache`).
// Optional timing hook (used by bench/run.mjs): startModelServer({ onTiming }) calls
// onTiming(record) once per streamed completion when its last byte has been handed to the OS (or
// when the client went away first); see `startModelServer` for the record's fields.

import http from 'node:http';
import { pathToFileURL } from 'node:url';

// Tool-call ids are `call_<n>` from one process-wide counter so that they never repeat across
// requests (or across servers started by the same process).
let toolCallCounter = 0;
let completionCounter = 0;

// Tool results longer than this are echoed as their size only.
const LARGE_RESULT_CHARS = 65536;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Text of a message's content: a string, or an array of parts whose text parts are joined. */
export function contentText(content) {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (typeof p === 'string' ? p : p && typeof p.text === 'string' ? p.text : ''))
      .join('');
  }
  return JSON.stringify(content);
}

/** Split a reply into word deltas: each word plus its following whitespace. */
export function wordsOf(text) {
  return text.match(/\S+\s*/g) ?? [];
}

function offeredToolNames(body) {
  const names = new Set();
  for (const t of Array.isArray(body?.tools) ? body.tools : []) {
    const name = t?.function?.name ?? t?.name;
    if (typeof name === 'string') names.add(name);
  }
  return names;
}

/** Parse `[tool:NAME:JSON]`: the first `}]` after which the JSON parses wins; raw text otherwise. */
function parseToolDirective(text) {
  const m = /\[tool:([^:\]\s]+):/.exec(text);
  if (!m) return null;
  const rest = text.slice(m.index + m[0].length);
  let firstClose = -1;
  for (let i = 0; i < rest.length - 1; i++) {
    if (rest[i] === '}' && rest[i + 1] === ']') {
      if (firstClose < 0) firstClose = i;
      try {
        const parsed = JSON.parse(rest.slice(0, i + 1));
        return { name: m[1], args: JSON.stringify(parsed) };
      } catch {
        /* keep looking for a later `}]` */
      }
    }
  }
  if (firstClose >= 0) return { name: m[1], args: rest.slice(0, firstClose + 1) }; // malformed JSON, verbatim
  const end = rest.indexOf(']');
  return { name: m[1], args: end >= 0 ? rest.slice(0, end) : '{}' };
}

/**
 * Parse `[tool-each:NAME:[JSON, …]]`: one call of NAME per element of the array (its arguments);
 * the first `]]` after which the array parses wins. Null when absent or unreadable.
 */
function parseToolEachDirective(text) {
  const m = /\[tool-each:([^:\]\s]+):/.exec(text);
  if (!m) return null;
  const rest = text.slice(m.index + m[0].length);
  for (let i = rest.indexOf(']]'); i >= 0; i = rest.indexOf(']]', i + 1)) {
    try {
      const list = JSON.parse(rest.slice(0, i + 1));
      if (Array.isArray(list)) return list.map((args) => call(m[1], args));
    } catch {
      /* keep looking for a later `]]` */
    }
  }
  return null;
}

/** The instruction a recovering agent appends after its cut answer. */
export function isContinueInstruction(text) {
  return /^Continue your previous response/i.test(text.trim());
}

/** The text of the assistant messages since the last real user message (a cut answer). */
function cutAnswer(messages) {
  const parts = [];
  for (let i = messages.length - 2; i >= 0 && messages[i]?.role === 'assistant'; i--) {
    parts.unshift(contentText(messages[i].content));
  }
  return parts.join('');
}

function call(name, argsObjOrString) {
  const args = typeof argsObjOrString === 'string' ? argsObjOrString : JSON.stringify(argsObjOrString);
  return { name, args };
}

/**
 * `[http-once:NNN]` in the last user message: { status, headers } the first time that message is
 * seen by this server (remembered in `seen`), else null.
 */
function failOnce(body, seen) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
  const text = contentText(lastUser?.content);
  const m = /\[http-once:(\d{3})\]/.exec(text);
  if (!m || seen.has(text)) return null;
  seen.add(text);
  const hint = /\[retry-after-ms:(\d+)\]/.exec(text);
  return { status: Number(m[1]), headers: hint ? { 'retry-after-ms': hint[1] } : {} };
}

/**
 * `[truncate-once]` in the last user message: true the first time that message is seen by this
 * server (remembered in `seen`): that reply streams two words and ends without a finish, as a
 * dropped connection does; a later request with it (or a continuation) is answered normally.
 */
function truncateOnce(body, seen) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
  const text = contentText(lastUser?.content);
  if (!text.includes('[truncate-once]') || seen.has(text)) return false;
  seen.add(text);
  return true;
}

/**
 * Decide the reply for a request body. Returns one of
 *   { kind: 'http', status, message }
 *   { kind: 'text', text, mode: 'normal' | 'stream-error' | 'truncate' | 'hang', delayMs }
 *   { kind: 'tools', calls: [{ name, args }], delayMs }
 * Tool-call ids are assigned when the reply is produced.
 */
/** The simplest value that follows a JSON schema (the subset structured output uses); strings are `text`. */
export function sampleOf(schema, text) {
  if (!schema || typeof schema !== 'object') return null;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if ('const' in schema) return schema.const;
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options) && options.length) return sampleOf(options[0], text);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === 'object' || schema.properties) {
    const out = {};
    for (const name of schema.required ?? Object.keys(schema.properties ?? {})) out[name] = sampleOf(schema.properties?.[name], text);
    return out;
  }
  if (type === 'array') return [];
  if (type === 'number' || type === 'integer') return 0;
  if (type === 'boolean') return false;
  if (type === 'null') return null;
  return text;
}

export function planReply(body) {
  const reply = planFreshReply(body);
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
  if (reply.kind !== 'text' || !isContinueInstruction(contentText(lastUser?.content))) return reply;
  const said = cutAnswer(messages);
  return reply.text.startsWith(said) ? { ...reply, text: reply.text.slice(said.length) } : reply;
}

function planFreshReply(body) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const last = messages[messages.length - 1];
  const users = messages.filter((m) => m?.role === 'user');
  let lastUser = users[users.length - 1];
  // A recovering agent asks the model to continue its cut answer: answer the real request
  // and send only what the cut answer is missing, so a recovered turn reads as one answer.
  const continuing = isContinueInstruction(contentText(lastUser?.content));
  if (continuing) lastUser = users[users.length - 2];
  const text = contentText(lastUser?.content).trim();
  const delayMatch = /\[delay:(\d+)\]/.exec(text);
  const delayMs = delayMatch ? Number(delayMatch[1]) : 0;
  const offered = offeredToolNames(body);
  const tools = (...calls) => ({ kind: 'tools', calls, delayMs });
  const say = (t, mode = 'normal') => ({ kind: 'text', text: t, mode, delayMs });

  // A model that calls tools forever, even right after a tool result.
  if (text.includes('[loop-tools]')) return tools(call('get_weather', { city: 'Loop' }));

  if (last?.role === 'tool') {
    let start = messages.length;
    while (start > 0 && messages[start - 1]?.role === 'tool') start--;
    const names = new Map();
    for (const m of messages) {
      if (m?.role !== 'assistant' || !Array.isArray(m.tool_calls)) continue;
      for (const tc of m.tool_calls) if (tc?.id) names.set(tc.id, tc?.function?.name);
    }
    const parts = messages.slice(start).map((m) => {
      const label = names.get(m.tool_call_id) || m.name || m.tool_call_id;
      const content = contentText(m.content);
      // A large result is summarised by its size (the reply stays a short answer).
      if (content.length > LARGE_RESULT_CHARS) return `${label}=<${Buffer.byteLength(content)} bytes>`;
      return `${label}=${content}`;
    });
    return say(`Tool results: ${parts.join('; ')}`);
  }

  const echo = `You said: ${text}`;

  // Exactly the text after `[json:` (up to the last `]`): a structured answer, right or wrong.
  const jsonMatch = /\[json:(.*)\]\s*$/s.exec(text);
  if (jsonMatch) return say(jsonMatch[1]);
  // Asked for a structured answer (`response_format` with a JSON schema), a model in strict mode
  // answers JSON that follows it: here the simplest such value, its strings saying the echo.
  const schema = body?.response_format?.json_schema?.schema;
  if (body?.response_format?.type === 'json_schema' && schema) return say(JSON.stringify(sampleOf(schema, echo)));

  // An error answer whose body is 20 MB (its message first, then padding).
  const hugeMatch = /\[http-huge:(\d{3})\]/.exec(text);
  if (hugeMatch) {
    const status = Number(hugeMatch[1]);
    return { kind: 'http', status, message: `scripted huge error ${status}`, bodyBytes: 20_000_000 };
  }
  const httpMatch = /\[http:(\d{3})\]/.exec(text);
  if (httpMatch) {
    const status = Number(httpMatch[1]);
    return { kind: 'http', status, message: `scripted error ${status}` };
  }
  if (text.includes('[stream-error]')) return say(echo, 'stream-error');
  if (text.includes('[truncate]')) return say(echo, 'truncate');
  if (text.includes('[hang]')) return say(echo, 'hang');

  const eachCalls = parseToolEachDirective(text);
  if (eachCalls?.length) return tools(...eachCalls);
  const toolDirective = parseToolDirective(text);
  if (toolDirective) return tools(call(toolDirective.name, toolDirective.args));
  const toolsMatch = /\[tools:([^\]]*)\]/.exec(text);
  if (toolsMatch) {
    const names = toolsMatch[1].split(',').map((s) => s.trim()).filter(Boolean);
    if (names.length) return tools(...names.map((n) => call(n, {})));
  }

  const tokensMatch = /\[tokens:(\d+)\]/.exec(text);
  if (tokensMatch) {
    const n = Number(tokensMatch[1]);
    return say(Array.from({ length: n }, (_, i) => `w${i + 1}`).join(' '));
  }

  // Plain-language rules: directives are stripped first; a rule whose tool is not offered in
  // `tools` is skipped (the next rule may still match; none ⇒ the echo reply).
  const plain = text.replace(/\[[^\]]*\]/g, ' ').replace(/\s+/g, ' ').trim();
  const rules = [
    ['get_weather', () => {
      const m = /weather in ([^?!.,;:\n]+)/i.exec(plain);
      return m && m[1].trim() ? { city: m[1].trim() } : null;
    }],
    ['getUserTimezone', () => (/timezone/i.test(plain) ? {} : null)],
    ['getScreenSize', () => (/screen size/i.test(plain) ? {} : null)],
    ['delete_file', () => {
      const m = /\bdelete\s+(\S+)/i.exec(plain);
      const path = m ? m[1].replace(/[?!,;]+$/, '') : '';
      return path ? { path } : null;
    }],
    ['parent_clock', () => (/\bclock\b/i.test(plain) ? {} : null)],
    ['parent_fail', () => (/\bfail\b/i.test(plain) ? {} : null)],
    ['delegate', () => {
      const m = /\bdelegate\s+([^:\s]+):\s*(.+)$/i.exec(plain);
      return m ? { agent: m[1], task: m[2].trim() } : null;
    }],
  ];
  for (const [name, match] of rules) {
    if (!offered.has(name)) continue;
    const args = match();
    if (args) return tools(call(name, args));
  }

  return say(echo);
}

/** Ends `res` with `body` (a JSON object) padded by a `padding` field to about `bytes` bytes, in 1 MB writes. */
async function writePadded(res, body, bytes) {
  res.write(`${body.slice(0, -1)},"padding":"`);
  for (let left = bytes; left > 0 && !res.destroyed; left -= 1_000_000) {
    if (!res.write('p'.repeat(Math.min(left, 1_000_000)))) {
      await new Promise((resolve) => { res.once('drain', resolve); res.once('close', resolve); });
    }
  }
  res.end('"}');
}

function errorBody(message) {
  return JSON.stringify({ error: { message, type: 'scripted' } });
}

function splitArgs(args) {
  if (args.length < 2) return [args, ''];
  const n = Math.max(2, Math.ceil(args.length / 8));
  const size = Math.ceil(args.length / n);
  const pieces = [];
  for (let i = 0; i < args.length; i += size) pieces.push(args.slice(i, i + size));
  if (pieces.length < 2) return [args.slice(0, 1), args.slice(1)];
  return pieces;
}

function approxTokens(messages) {
  let n = 0;
  for (const m of messages ?? []) n += wordsOf(contentText(m?.content)).length + 4;
  return n;
}

/** Prompt tokens of a request body as the prompt cache counts them: its bytes, four to a token. */
export const bodyTokens = (bytes) => Math.ceil(bytes / 4);

/**
 * A provider's prompt cache, modelled on OpenAI's: a request's cached input is the longest start
 * its body shares with one of the recent bodies (the last `keep`), in tokens (bytes / 4), counted
 * only from 1,024 tokens on and then in steps of 128 (1,024, 1,152, 1,280, …). Every request
 * seen is remembered, whoever sent it; `records` collects { promptTokens, cachedTokens } per
 * request, in arrival order.
 */
export class PromptCache {
  constructor({ keep = 32, minTokens = 1024, stepTokens = 128 } = {}) {
    this.keep = keep;
    this.minTokens = minTokens;
    this.stepTokens = stepTokens;
    this.bodies = [];
    this.records = [];
  }

  /** The usage of request body `raw` (a string); remembers the body. */
  usageOf(raw) {
    const body = Buffer.from(raw, 'utf8');
    let shared = 0;
    for (const earlier of this.bodies) shared = Math.max(shared, commonPrefixBytes(earlier, body));
    const promptTokens = bodyTokens(body.length);
    const sharedTokens = Math.floor(shared / 4);
    const cachedTokens = sharedTokens < this.minTokens
      ? 0
      : Math.min(promptTokens, this.minTokens + Math.floor((sharedTokens - this.minTokens) / this.stepTokens) * this.stepTokens);
    this.bodies.push(body);
    if (this.bodies.length > this.keep) this.bodies.shift();
    const record = { promptTokens, cachedTokens };
    this.records.push(record);
    return record;
  }
}

/** Length of the longest common start of two buffers (binary search on equal prefixes). */
function commonPrefixBytes(a, b) {
  let lo = 0;
  let hi = Math.min(a.length, b.length);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (a.subarray(0, mid).equals(b.subarray(0, mid))) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/** The usage object of a completion; with a cached-prompt record, OpenAI's cached-token detail. */
function usageOf(body, completionTokens, cached) {
  const promptTokens = cached ? cached.promptTokens : approxTokens(body.messages);
  const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
  if (cached) usage.prompt_tokens_details = { cached_tokens: cached.cachedTokens };
  return usage;
}

async function streamReply(req, res, body, plan, timing = null, cached = null) {
  const id = `chatcmpl-scripted-${++completionCounter}`;
  const created = Math.floor(Date.now() / 1000);
  const model = typeof body.model === 'string' ? body.model : 'scripted-model';
  let gone = false;
  res.on('close', () => { gone = true; });
  if (timing) {
    timing.completionId = id;
    let reported = false;
    const report = (complete) => {
      if (reported) return;
      reported = true;
      timing.lastByteAt = performance.now();
      timing.complete = complete;
      try { timing.onTiming(timing.record()); } catch { /* a hook must not break the stream */ }
    };
    res.on('finish', () => report(true));
    res.on('close', () => report(false));
  }

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  res.flushHeaders();
  req.socket.setNoDelay(true);
  if (timing) timing.firstByteAt = performance.now();

  let flushed = Promise.resolve();
  const write = (obj) => {
    if (gone) return false;
    if (timing) timing.chunks++;
    flushed = new Promise((resolve) => {
      res.write(`data: ${typeof obj === 'string' ? obj : JSON.stringify(obj)}\n\n`, () => resolve());
    });
    return true;
  };
  const chunk = (delta, finish_reason = null) => ({
    id, object: 'chat.completion.chunk', created, model, system_fingerprint: null,
    choices: [{ index: 0, delta, logprobs: null, finish_reason }],
  });
  let first = true;
  const pause = async () => {
    if (!first && plan.delayMs > 0) await sleep(plan.delayMs);
    first = false;
    return !gone;
  };

  let completionTokens = 0;
  let finish;
  if (plan.kind === 'tools') {
    write(chunk({ role: 'assistant', content: null }));
    let index = 0;
    for (const c of plan.calls) {
      const callId = `call_${++toolCallCounter}`;
      if (!(await pause())) return;
      write(chunk({ tool_calls: [{ index, id: callId, type: 'function', function: { name: c.name, arguments: '' } }] }));
      for (const piece of splitArgs(c.args)) {
        if (!(await pause())) return;
        write(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
        completionTokens++;
      }
      index++;
    }
    finish = 'tool_calls';
  } else {
    write(chunk({ role: 'assistant', content: '' }));
    let words = wordsOf(plan.text);
    if (plan.mode === 'stream-error' || plan.mode === 'truncate') words = words.slice(0, 2);
    if (plan.mode === 'hang') words = words.slice(0, 3);
    for (const w of words) {
      if (!(await pause())) return;
      if (timing && timing.firstContentAt === null) timing.firstContentAt = performance.now();
      write(chunk({ content: w }));
      completionTokens++;
    }
    if (plan.mode === 'stream-error') {
      write({ error: { message: 'scripted stream failure' } });
      res.end();
      return;
    }
    if (plan.mode === 'truncate') {
      // Cut the connection once the words are on the wire: no finish chunk, no [DONE], no
      // terminating HTTP chunk (the client sees the body end prematurely).
      await flushed;
      res.socket?.end();
      res.socket?.destroy();
      return;
    }
    if (plan.mode === 'hang') return; // stays open until the client aborts or the server closes
    finish = 'stop';
  }
  if (!(await pause())) return;
  write(chunk({}, finish));
  write({
    id, object: 'chat.completion.chunk', created, model, system_fingerprint: null, choices: [],
    usage: usageOf(body, completionTokens, cached),
  });
  write('[DONE]');
  res.end();
}

function jsonReply(res, body, plan, cached = null) {
  const model = typeof body.model === 'string' ? body.model : 'scripted-model';
  const message = { role: 'assistant', content: null };
  let finish = 'stop';
  if (plan.kind === 'tools') {
    message.tool_calls = plan.calls.map((c) => ({
      id: `call_${++toolCallCounter}`, type: 'function', function: { name: c.name, arguments: c.args },
    }));
    finish = 'tool_calls';
  } else {
    message.content = plan.text;
  }
  const completionTokens = plan.kind === 'tools' ? plan.calls.length : wordsOf(plan.text).length;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({
    id: `chatcmpl-scripted-${++completionCounter}`, object: 'chat.completion',
    created: Math.floor(Date.now() / 1000), model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
    usage: usageOf(body, completionTokens, cached),
  }));
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Start the scripted model server.
 * @param {object} [opts]
 * @param {number} [opts.port] default 0 (any free port)
 * @param {string} [opts.host] default 127.0.0.1
 * @param {(record: object) => void} [opts.onTiming] optional timing hook, called once per
 *   streamed completion (`stream: true`) with { completionId, kind: 'text'|'tools',
 *   lastUserText, receivedAt, firstByteAt, firstContentAt, lastByteAt, chunks, complete }:
 *   times are this process's performance.now() (ms); receivedAt = request body read, firstByteAt =
 *   headers flushed, firstContentAt = first text word written (null for tool calls), lastByteAt =
 *   the response's last byte handed to the OS ('finish'; or the close time when the client went
 *   away first, then complete=false); chunks = SSE events written. Without it nothing changes.
 * @param {number} [opts.maxContextBytes] requests whose body is longer are answered 400
 *   `context_length_exceeded`, as OpenAI answers one longer than the model's context (their sizes
 *   are collected in `refusedForContext`, and they are not in `requests`).
 * @param {boolean} [opts.promptCache] off by default; when on, usage reports prompt tokens as the
 *   body's bytes / 4 and the cached part a prefix cache would serve (`PromptCache`); the returned
 *   `promptCache.records` has one { promptTokens, cachedTokens } per request.
 * @returns {Promise<{url: string, port: number, requests: object[], close: () => Promise<void>}>}
 *   `url` is the OpenAI base URL, e.g. http://127.0.0.1:PORT/v1; `requests` collects every
 *   chat-completions request body (cleared by POST /__reset).
 */
export async function startModelServer({ port = 0, host = '127.0.0.1', onTiming, maxContextBytes, promptCache = false } = {}) {
  const requests = [];
  const cache = promptCache ? new PromptCache() : null;
  /** Byte sizes of the requests refused as longer than `maxContextBytes`. */
  const refusedForContext = [];
  const failedOnce = new Set();
  const server = http.createServer(async (req, res) => {
    try {
      const path = new URL(req.url, 'http://x').pathname;
      if (req.method === 'GET' && path === '/__requests') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(requests));
        return;
      }
      if (req.method === 'POST' && path === '/__reset') {
        await readBody(req);
        requests.length = 0;
        failedOnce.clear();
        res.writeHead(204);
        res.end();
        return;
      }
      if (req.method === 'GET' && (path === '/v1/models' || path === '/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'scripted-model', object: 'model', owned_by: 'scripted' }] }));
        return;
      }
      if (req.method === 'POST' && (path === '/v1/chat/completions' || path === '/chat/completions')) {
        const raw = await readBody(req);
        const receivedAt = performance.now();
        let body;
        try {
          body = JSON.parse(raw);
        } catch {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(errorBody('request body is not JSON'));
          return;
        }
        if (maxContextBytes && Buffer.byteLength(raw) > maxContextBytes) {
          // What OpenAI answers a request longer than the model's context.
          refusedForContext.push(Buffer.byteLength(raw));
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: {
            message: `This model's maximum context length is ${maxContextBytes} bytes; the request has ${Buffer.byteLength(raw)}.`,
            type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded',
          } }));
          return;
        }
        requests.push(body);
        const cached = cache ? cache.usageOf(raw) : null;
        const once = failOnce(body, failedOnce);
        if (once) {
          res.writeHead(once.status, { 'content-type': 'application/json', ...once.headers });
          res.end(errorBody(`scripted transient error ${once.status}`));
          return;
        }
        let plan = planReply(body);
        if (plan.kind === 'text' && truncateOnce(body, failedOnce)) plan = { ...plan, mode: 'truncate' };
        if (plan.kind === 'http') {
          res.writeHead(plan.status, { 'content-type': 'application/json' });
          if (plan.bodyBytes) await writePadded(res, errorBody(plan.message), plan.bodyBytes);
          else res.end(errorBody(plan.message));
          return;
        }
        if (body.stream === true) {
          let timing = null;
          if (typeof onTiming === 'function') {
            const messages = Array.isArray(body.messages) ? body.messages : [];
            const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
            timing = {
              onTiming, completionId: null, kind: plan.kind, lastUserText: contentText(lastUser?.content),
              receivedAt, firstByteAt: null, firstContentAt: null, lastByteAt: null, chunks: 0, complete: false,
              record() {
                const { onTiming: _hook, record: _record, ...fields } = this;
                return fields;
              },
            };
          }
          await streamReply(req, res, body, plan, timing, cached);
        }
        else jsonReply(res, body, plan, cached);
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(errorBody(`no route for ${req.method} ${path}`));
    } catch (err) {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(errorBody(String(err?.message ?? err)));
      } else {
        res.destroy();
      }
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const actualPort = server.address().port;
  let closed = false;
  return {
    url: `http://${host}:${actualPort}/v1`,
    port: actualPort,
    requests,
    refusedForContext,
    promptCache: cache,
    server,
    close() {
      if (closed) return Promise.resolve();
      closed = true;
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // also ends [hang] streams
      });
    },
  };
}

// CLI: node tests/support/model-server.mjs [--port 8788] [--host 127.0.0.1]
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : dflt;
  };
  const srv = await startModelServer({ port: Number(opt('port', '8788')), host: opt('host', '127.0.0.1') });
  console.log(`model server listening on ${srv.url}`);
  const stop = () => srv.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

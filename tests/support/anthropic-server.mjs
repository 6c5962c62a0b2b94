// Scripted Anthropic Messages API server for end-to-end tests (Node http, no deps).
// Owns: POST /v1/messages streaming real server-sent events (`message_start`, `ping`,
// `content_block_start` / `content_block_delta` / `content_block_stop`, `message_delta`,
// `message_stop`), the recorded requests (`requests`: {headers, body}), and a prompt cache that
// behaves as the API's: each `cache_control` breakpoint writes the request's prefix up to it
// (tools, then system, then messages), and a later request starting with a written prefix reads
// it (each breakpoint looks back up to 20 blocks for one, as the API does); usage reports `cache_read_input_tokens` / `cache_creation_input_tokens` (4 characters a
// token). Replies: a conversation ending in a tool result answers "The tool said <result>";
// `[tool:NAME:JSON]` in the last user text calls that tool (its input streamed in two
// `input_json_delta`s); a user message with an image says what it saw; anything else echoes.
// A request without the expected `x-api-key` is refused with the API's 401 error shape.

import http from 'node:http';

let toolUseCounter = 0;

const tokens = (text) => Math.ceil(text.length / 4);

/** The request with every `cache_control` removed, as the cache compares it. */
function strip(value) {
  if (Array.isArray(value)) return value.map(strip);
  if (value && typeof value === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(value)) if (k !== 'cache_control') out[k] = strip(v);
    return out;
  }
  return value;
}

/**
 * The request's prefixes at its breakpoints, in order: each the canonical text of everything up to
 * and including the marked block (tools, then system blocks, then message blocks).
 */
function breakpointPrefixes(body) {
  const blocks = [];
  for (const t of body.tools ?? []) blocks.push(['tool', t]);
  for (const s of Array.isArray(body.system) ? body.system : []) blocks.push(['system', s]);
  for (const [i, m] of (body.messages ?? []).entries()) {
    const content = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    for (const b of content) blocks.push([`${m.role}#${i}`, b]);
  }
  const prefixes = [];
  const boundaries = [];
  let text = '';
  for (const [where, block] of blocks) {
    text += where + JSON.stringify(strip(block));
    boundaries.push(text);
    if (block?.cache_control) prefixes.push({ text, at: boundaries.length - 1 });
  }
  return { prefixes, boundaries, total: text };
}

/**
 * What the request reads from the cache: as the API does, each breakpoint looks back over the
 * block boundaries before it (up to 20 blocks) for a prefix an earlier request wrote; the longest
 * hit is read.
 */
function cacheHit(cache, { prefixes, boundaries }) {
  let best = '';
  for (const { at } of prefixes) {
    for (let i = at; i >= 0 && i >= at - 20; i--) {
      if (cache.has(boundaries[i])) {
        if (boundaries[i].length > best.length) best = boundaries[i];
        break;
      }
    }
  }
  return best;
}

function lastUserText(message) {
  if (!message || message.role !== 'user') return '';
  if (typeof message.content === 'string') return message.content;
  return message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

function planReply(body) {
  const last = body.messages.at(-1);
  const blocks = typeof last?.content === 'string' ? [] : last?.content ?? [];
  const result = blocks.find((b) => b.type === 'tool_result');
  if (result) {
    const content = typeof result.content === 'string' ? result.content : JSON.stringify(result.content);
    return { text: `The tool said ${content}` };
  }
  const text = lastUserText(last);
  const directive = /\[tool:([^:\]\s]+):(\{.*?\})\]/.exec(text);
  if (directive && (body.tools ?? []).some((t) => t.name === directive[1])) {
    return { text: `Calling ${directive[1]}.`, tool: { name: directive[1], input: directive[2] } };
  }
  const image = blocks.find((b) => b.type === 'image');
  if (image) {
    const source = image.source;
    const seen = source.type === 'base64' ? `${source.media_type}, ${source.data.length} base64 characters` : source.url;
    return { text: `I see an image (${seen}).` };
  }
  return { text: `Claude heard: ${text}` };
}

const words = (text) => text.match(/\S+\s*/g) ?? [];

function sse(res, type, data) {
  res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
}

/**
 * @param {{apiKey?: string}} [options]
 * @returns {Promise<{url: string, requests: {headers: object, body: object}[], usages: object[], close: () => Promise<void>}>}
 *   `url` is the API base (`http://127.0.0.1:PORT/v1`); `usages` is the usage each reply reported.
 */
export async function startAnthropicServer({ apiKey = 'ant-test-key' } = {}) {
  const requests = [];
  const usages = [];
  const cache = new Set();
  const server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || new URL(req.url, 'http://x').pathname !== '/v1/messages') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'Not found' } }));
      return;
    }
    if (req.headers['x-api-key'] !== apiKey) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }));
      return;
    }
    let body;
    try {
      body = JSON.parse(raw);
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'body is not JSON' } }));
      return;
    }
    requests.push({ headers: req.headers, body });

    const cut = breakpointPrefixes(body);
    const read = cacheHit(cache, cut);
    const written = cut.prefixes.at(-1)?.text ?? '';
    for (const p of cut.prefixes) cache.add(p.text);
    const total = cut.total;
    const cacheRead = tokens(read);
    const cacheWrite = Math.max(tokens(written) - cacheRead, 0);
    const usage = {
      input_tokens: tokens(total) - cacheRead - cacheWrite,
      cache_read_input_tokens: cacheRead,
      cache_creation_input_tokens: cacheWrite,
    };

    const plan = planReply(body);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    sse(res, 'message_start', { message: {
      id: `msg_${requests.length}`, type: 'message', role: 'assistant', model: body.model, content: [],
      stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 },
    } });
    sse(res, 'content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    sse(res, 'ping', {});
    for (const w of words(plan.text)) sse(res, 'content_block_delta', { index: 0, delta: { type: 'text_delta', text: w } });
    sse(res, 'content_block_stop', { index: 0 });
    if (plan.tool) {
      const id = `toolu_${++toolUseCounter}`;
      sse(res, 'content_block_start', { index: 1, content_block: { type: 'tool_use', id, name: plan.tool.name, input: {} } });
      const half = Math.floor(plan.tool.input.length / 2);
      for (const part of [plan.tool.input.slice(0, half), plan.tool.input.slice(half)]) {
        sse(res, 'content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: part } });
      }
      sse(res, 'content_block_stop', { index: 1 });
    }
    const output = words(plan.text).length + (plan.tool ? 10 : 0);
    usages.push({ ...usage, output_tokens: output });
    sse(res, 'message_delta', { delta: { stop_reason: plan.tool ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: output } });
    sse(res, 'message_stop', {});
    res.end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    usages,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

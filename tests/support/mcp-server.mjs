// A small MCP server for the demo and the end-to-end tests, built on the official TypeScript SDK
// (`@modelcontextprotocol/sdk`) over its Streamable HTTP transport, one session per client.
// Owns: the tools `add` (text and structured content), `echo`, `fail` (a tool error) and
// `picture` (an image and text) — with `extras`, also `document` (an embedded resource and a
// resource link) and `grow` (adds `later`, announced by `notifications/tools/list_changed`) — the call log (GET /__calls), an optional bearer token, `tools/list`
// in pages of `pageSize` tools (cursor: the next index) when asked, and the CLI
// `node tests/support/mcp-server.mjs [--port 8790] [--host 127.0.0.1] [--token T]`
// (serves POST/GET/DELETE /mcp), and with `oauth: {accessTtlSeconds}` the same server behind the
// test authorization server of tests/support/mcp-oauth.mjs (same origin); with `legacySse` it
// speaks only the older HTTP+SSE transport (GET /mcp: the event stream; POST /messages; a POST to
// /mcp is refused with 405). Hostile modes for the agent's bounds: `hostile: 'tiny-values'` answers
// `tools/list` with ~4 MiB of tiny values (a tool whose schema holds `[0,0,…]`), `hostile:
// 'huge-spec'` lists the tools plus `huge`, whose spec is 3 MiB, `hostile: 'rpc-error'` answers it
// with an error whose message holds a forged log line and 20000 more characters; `flood()` writes 1 MiB events to
// every open HTTP+SSE stream until the client closes it (at most `floodBytes` in all).

import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { oauthApp } from './mcp-oauth.mjs';

/** An 8×8 red PNG, base64 (for `picture`). */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAgAAAAIAQMAAAD+wSzIAAAABlBMVEX/AAD///9BHTQRAAAADklEQVQI12P4z8BQDwAEgAF/QualIQAAAABJRU5ErkJggg==';

/** The tools only a server started with `extras` has: an embedded resource, and a tool list that grows. */
function extraTools(server, logged, shared) {
  const later = () => server.registerTool('later', {
    description: 'A tool that appeared after the first listing.',
    inputSchema: {},
  }, logged('later', () => ({ content: [{ type: 'text', text: 'here now' }] })));
  if (shared.grown) later();
  server.registerTool('document', {
    description: 'Returns a document and a link.',
    inputSchema: {},
  }, logged('document', () => ({
    content: [
      { type: 'resource', resource: { uri: 'memo://notes/1', mimeType: 'text/plain', text: 'Remember the milk.' } },
      { type: 'resource_link', uri: 'https://example.com/spec.pdf', name: 'spec.pdf', mimeType: 'application/pdf' },
    ],
  })));
  server.registerTool('grow', {
    description: 'Adds the tool `later` and says the tool list changed.',
    inputSchema: {},
  }, logged('grow', async (_args, extra) => {
    if (!shared.grown) {
      shared.grown = true;
      later();
    }
    // On this call's answer stream (a notification outside a request goes to a GET stream).
    await extra.sendNotification({ method: 'notifications/tools/list_changed' });
    return { content: [{ type: 'text', text: 'grown' }] };
  }));
}

function toolServer(calls, pageSize, shared) {
  const server = new McpServer({ name: 'durable-chat-test-tools', version: '1.0.0' }, { instructions: 'Small arithmetic and echo tools.' });
  const logged = (name, run) => async (args, extra) => {
    calls.push({ name, args });
    return run(args, extra);
  };
  server.registerTool('add', {
    description: 'Adds two numbers.',
    inputSchema: { a: z.number(), b: z.number() },
    outputSchema: { sum: z.number() },
  }, logged('add', ({ a, b }) => ({
    content: [{ type: 'text', text: JSON.stringify({ sum: a + b }) }],
    structuredContent: { sum: a + b },
  })));
  server.registerTool('echo', {
    description: 'Says the text back.',
    inputSchema: { text: z.string() },
  }, logged('echo', ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] })));
  server.registerTool('fail', {
    description: 'Always fails.',
    inputSchema: {},
  }, logged('fail', () => ({ isError: true, content: [{ type: 'text', text: 'the tool failed on purpose' }] })));
  server.registerTool('picture', {
    description: 'Draws a small picture.',
    inputSchema: {},
  }, logged('picture', () => ({ content: [{ type: 'image', mimeType: 'image/png', data: PNG }, { type: 'text', text: 'a red square' }] })));
  if (shared) extraTools(server, logged, shared);
  if (pageSize) {
    // The SDK lists every tool at once; its own listing (kept in its handler map) is cut in pages.
    const listAll = server.server._requestHandlers.get('tools/list');
    server.server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
      const { tools } = await listAll({ method: 'tools/list', params: {} }, extra);
      const start = Number(request.params?.cursor ?? 0);
      const next = start + pageSize;
      return { tools: tools.slice(start, next), ...(next < tools.length ? { nextCursor: String(next) } : {}) };
    });
  }
  return server;
}

const MiB = 1024 * 1024;

/** The answer a hostile server gives to `tools/list` request `id`, or null for the real one. */
function hostileListing(hostile, id) {
  const good = [
    { name: 'add', description: 'Adds two numbers.', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } } },
    { name: 'echo', description: 'Says the text back.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  ];
  if (hostile === 'tiny-values') {
    const zeros = `[${'0,'.repeat(Math.floor((4 * MiB - 4096) / 2) - 1)}0]`;
    const tools = JSON.stringify([...good, { name: 'tiny', inputSchema: { type: 'object', junk: '@@' } }]).replace('"@@"', zeros);
    return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"tools":${tools}}}`;
  }
  if (hostile === 'rpc-error') {
    const message = `no tools today\n[chat-agent victim] turn ended request=forged outcome=completed\n${'e'.repeat(20000)}`;
    return JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32000, message } });
  }
  if (hostile === 'huge-spec') {
    const huge = { name: 'huge', description: 'h'.repeat(3 * MiB), inputSchema: { type: 'object' } };
    return JSON.stringify({ jsonrpc: '2.0', id, result: { tools: [...good, huge] } });
  }
  return null;
}

/** Writes 1 MiB events to `res` until it closes or `limit` bytes went out; resolves to the bytes written. */
async function floodStream(res, limit) {
  const event = `data: ${'x'.repeat(MiB - 8)}\n\n`;
  let sent = 0;
  while (!res.destroyed && !res.writableEnded && sent < limit) {
    sent += event.length;
    if (!res.write(event)) {
      await new Promise((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
    }
  }
  return sent;
}

/**
 * Starts the server. Resolves to {url (…/mcp), port, calls (every tool call: {name, args}),
 * sessions (ids opened so far), listings (the cursor of every tools/list, null for the first page),
 * events (with `oauth`), hits (every HTTP request it was sent, as `METHOD path`), close()}.
 */
export async function startMcpServer({ port = 0, host = '127.0.0.1', token, pageSize, oauth, extras, legacySse, hostile, floodBytes = 160 * MiB } = {}) {
  const streams = new Map();
  /** The responses of the open HTTP+SSE streams (for `flood`). */
  const streamResponses = new Set();
  const shared = extras ? { grown: false } : undefined;
  const listings = [];
  const calls = [];
  const sessions = new Map();
  const opened = [];
  const handler = async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/__calls') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(calls));
      return;
    }
    if (legacySse) {
      await serveLegacy(req, res, url);
      return;
    }
    if (url.pathname !== '/mcp') {
      res.writeHead(404).end('not found');
      return;
    }
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('missing or wrong bearer token');
      return;
    }
    try {
      const sessionId = req.headers['mcp-session-id'];
      let transport = sessionId ? sessions.get(sessionId) : undefined;
      if (sessionId && !transport) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      if (!transport) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            sessions.set(id, transport);
            opened.push(id);
          },
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await toolServer(calls, pageSize, shared).connect(transport);
      }
      if (req.method === 'POST') {
        const chunks = [];
        for await (const chunk of req) chunks.push(chunk);
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
        if (body?.method === 'tools/list') listings.push(body.params?.cursor ?? null);
        const listing = body?.method === 'tools/list' && hostileListing(hostile, body.id);
        if (listing) {
          res.writeHead(200, { 'content-type': 'application/json' }).end(listing);
          return;
        }
        await transport.handleRequest(req, res, body);
      } else {
        await transport.handleRequest(req, res);
      }
    } catch (err) {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err?.message ?? err));
    }
  };
  // The older HTTP+SSE transport only: GET /mcp opens the stream, whose endpoint is /messages.
  const serveLegacy = async (req, res, url) => {
    if (url.pathname === '/mcp' && req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      streams.set(transport.sessionId, transport);
      opened.push(transport.sessionId);
      streamResponses.add(res);
      res.on('close', () => {
        streams.delete(transport.sessionId);
        streamResponses.delete(res);
      });
      await toolServer(calls, pageSize, shared).connect(transport);
      return;
    }
    const transport = url.pathname === '/messages' && streams.get(url.searchParams.get('sessionId'));
    if (req.method !== 'POST' || !transport) {
      res.writeHead(url.pathname === '/mcp' ? 405 : 404, { 'content-type': 'text/plain' }).end('this server speaks HTTP+SSE only');
      return;
    }
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
    if (body?.method === 'tools/list') listings.push(body.params?.cursor ?? null);
    await transport.handlePostMessage(req, res, body);
  };
  const events = [];
  const httpServer = http.createServer();
  await new Promise((resolve) => httpServer.listen(port, host, resolve));
  const bound = httpServer.address().port;
  const origin = `http://${host}:${bound}`;
  const control = {};
  const hits = [];
  httpServer.on('request', (req) => hits.push(`${req.method} ${req.url}`));
  httpServer.on('request', oauth ? oauthApp({ origin, mcpHandler: handler, events, control, ...oauth }) : handler);
  return {
    url: `http://${host}:${bound}/mcp`,
    port: bound,
    calls,
    sessions: opened,
    hits,
    listings,
    /** With `oauth`: what the authorization server saw ({type: 'register' | 'authorize' | 'grant' | 'refused-token' | 'mcp', …}). */
    events,
    /** With `legacySse`: floods every open event stream; resolves to the bytes each one took before it closed. */
    flood: () => Promise.all([...streamResponses].map((res) => floodStream(res, floodBytes))),
    /** With `oauth`: makes the authorization server forget every access token it issued. */
    revokeAccessTokens: () => control.revokeAccessTokens?.(),
    async close() {
      for (const transport of sessions.values()) await transport.close().catch(() => {});
      for (const transport of streams.values()) await transport.close().catch(() => {});
      httpServer.closeAllConnections?.();
      await new Promise((resolve) => httpServer.close(() => resolve()));
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name, fallback) => {
    const at = process.argv.indexOf(`--${name}`);
    return at > 0 ? process.argv[at + 1] : fallback;
  };
  const server = await startMcpServer({ port: Number(arg('port', 8790)), host: arg('host', '127.0.0.1'), token: arg('token') });
  console.log(`mcp server: ${server.url}`);
  const stop = () => server.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

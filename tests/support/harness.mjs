// End-to-end test helpers: run the built worker (build/index.js + build/index_bg.wasm, made by
// scripts/build.sh) under Miniflare with persistent SQLite Durable Objects, talk to agents over
// real WebSockets (`ws` package) the way `useAgentChat` does, and read transcripts over HTTP.
// Owns: startWorker, connect, chatRequest, userMessage, getMessages, kebab and small frame helpers.

import { Miniflare, convertV4MiniflareOptions } from 'miniflare';
import WebSocket from 'ws';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startModelServer } from './model-server.mjs';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BUILD_DIR = join(ROOT, 'build');
/** The test build (`bash scripts/build.sh --test`): the release build with the `debug-routes`
 * feature, which the suites that turn on `DEBUG_TOOLS` run on (a deploy build has no such switch). */
export const TEST_BUILD_DIR = join(ROOT, 'target', 'worker-test');
export const COMPATIBILITY_DATE = '2026-11-15'; // keep in step with wrangler.toml

/** Default vars, as in wrangler.toml (OPENAI_BASE_URL is filled in by startWorker), plus the
 * deployment's channel secret, the internal fetch fallback, the test servers' host for outbound
 * fetches, and, for readable failures, the provider's error text on the tabs
 * (a deploy shows them only their status class). */
export const DEFAULT_BINDINGS = {
  OPENAI_BASE_URL: '',
  OPENAI_API_KEY: 'test-key',
  MODEL: 'scripted-model',
  MESSAGE_CONCURRENCY: 'queue',
  LOG_LEVEL: 'info',
  CHANNEL_SECRET: 'test-channel-secret',
  MODEL_ERROR_DETAIL: 'tabs',
  COORDINATOR_CHILDREN: '*, ThinkChild/*',
  MCP_ADMIN_TOKEN: 'test-admin',
  // The test servers (MCP, OAuth, model) listen on this machine; a hostile test turns it off.
  OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
};

/** What a request to the demo's MCP routes carries (the operator's `MCP_ADMIN_TOKEN`). */
export const ADMIN = { authorization: `Bearer ${DEFAULT_BINDINGS.MCP_ADMIN_TOKEN}` };

/** camelCase → kebab-case exactly as agents/partysocket do (`ChatAgent` → `chat-agent`). */
export function kebab(str) {
  if (str === str.toUpperCase() && str !== str.toLowerCase()) return str.toLowerCase().replace(/_/g, '-');
  let k = str.replace(/[A-Z]/g, (l) => `-${l.toLowerCase()}`);
  if (k.startsWith('-')) k = k.slice(1);
  return k.replace(/_/g, '-').replace(/-$/, '');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Whether the build at `buildDir` exports class `name`. */
function hasClass(buildDir, name) {
  try {
    return new RegExp(`\\b${name}\\b`).test(readFileSync(join(buildDir, 'index.js'), 'utf8'));
  } catch {
    return false;
  }
}

/**
 * The agent worker's own options in Miniflare's single-worker (v4) form: the build's modules, the
 * Durable Object classes (ChatAgent, Coordinator, and ChatDirectory when the build has it: a build
 * of an older commit has not), `bindings`, and `options` (`unsafePreventEviction` applies to every
 * class; anything else is a worker option such as `wrappedBindings`).
 */
export function agentWorkerOptions({ buildDir, bindings, options = {} }) {
  const { unsafePreventEviction, ...rest } = options;
  const object = (className) => ({ className, useSQLite: true, ...(unsafePreventEviction ? { unsafePreventEviction } : {}) });
  return {
    modules: [
      { type: 'ESModule', path: join(buildDir, 'index.js') },
      { type: 'CompiledWasm', path: join(buildDir, 'index_bg.wasm') },
    ],
    modulesRoot: buildDir,
    compatibilityDate: COMPATIBILITY_DATE,
    durableObjects: {
      ChatAgent: object('ChatAgent'),
      Coordinator: object('Coordinator'),
      ...(hasClass(buildDir, 'ChatDirectory') ? { ChatDirectory: object('ChatDirectory') } : {}),
    },
    bindings,
    ...rest,
  };
}

/**
 * Miniflare options for the built worker alone, converted to Miniflare 5's `workers` form.
 * Durable Object storage lands in `<persistDir>/do/-<ClassName>/<id>.sqlite`.
 */
export function miniflareOptions({ buildDir, persistDir, bindings, port, options }) {
  return convertV4MiniflareOptions({
    ...agentWorkerOptions({ buildDir, bindings, options }),
    resourcePersistencePath: persistDir,
    cf: false,
    host: '127.0.0.1',
    port,
  });
}

/**
 * The build a worker with `bindings` runs: the test build when any test-only switch (`DEBUG_…`)
 * is set (only that build has them), else build/ (whichever build was made last).
 */
function buildFor(bindings) {
  return Object.keys(bindings).some((k) => k.startsWith('DEBUG_')) ? TEST_BUILD_DIR : BUILD_DIR;
}

/**
 * Start the built worker under Miniflare.
 * @param {object} [opts]
 * @param {string} [opts.persistDir] DO storage dir; default: a fresh temp dir removed by close().
 * @param {object} [opts.bindings] vars merged over DEFAULT_BINDINGS. If OPENAI_BASE_URL is not
 *   given (or empty), a scripted model server is started and its URL used (exposed as `.model`).
 * @param {object} [opts.model] an already started model server ({url, ...}) to use instead.
 * @param {object} [opts.miniflare] extra Miniflare options (e.g. {unsafePreventEviction: true}).
 * @param {string} [opts.buildDir] directory holding index.js + index_bg.wasm (default build/, or
 *   the test build when a `DEBUG_…` switch is among the bindings).
 * @returns {Promise<{url: string, mf: Miniflare, model: object|null, persistDir: string,
 *   restart: (overrides?: {bindings?: object, miniflare?: object}) => Promise<void>, close: () => Promise<void>}>}
 *   `url` is http://127.0.0.1:PORT (no trailing slash); restart() keeps the port and persist dir.
 */
export async function startWorker({ persistDir, bindings = {}, model, miniflare = {}, buildDir = buildFor(bindings) } = {}) {
  for (const f of ['index.js', 'index_bg.wasm']) {
    if (!existsSync(join(buildDir, f))) throw new Error(`${join(buildDir, f)} missing: run bash scripts/build.sh ${buildDir === TEST_BUILD_DIR ? '--test' : ''} first`);
  }
  const ownDir = !persistDir;
  const dir = persistDir ?? (await mkdtemp(join(tmpdir(), 'durable-chat-do-')));
  let ownModel = null;
  let modelServer = model ?? null;
  if (!bindings.OPENAI_BASE_URL && !modelServer) modelServer = ownModel = await startModelServer();
  let currentBindings = {
    ...DEFAULT_BINDINGS,
    ...(modelServer ? { OPENAI_BASE_URL: modelServer.url } : {}),
    ...bindings,
  };
  let currentOptions = miniflare;

  let port = 0;
  let mf;
  let url;
  const launch = async () => {
    // The same port is reused on restart so that clients can reconnect to the same URL; it may
    // briefly still be held by the old process, so retry a few times.
    for (let attempt = 0; ; attempt++) {
      mf = new Miniflare(miniflareOptions({ buildDir, persistDir: dir, bindings: currentBindings, port, options: currentOptions }));
      try {
        const ready = await mf.ready;
        port = Number(ready.port);
        url = `http://127.0.0.1:${port}`;
        return;
      } catch (err) {
        await mf.dispose().catch(() => {});
        if (attempt >= 10 || port === 0) throw err;
        await sleep(100);
      }
    }
  };
  await launch();

  let closed = false;
  const handle = {
    get url() { return url; },
    get mf() { return mf; },
    get port() { return port; },
    model: modelServer,
    persistDir: dir,
    /** Dispose the Miniflare process (sockets drop with 1006) and start a new one on the same storage. */
    async restart({ bindings: b, miniflare: m } = {}) {
      if (b) currentBindings = { ...currentBindings, ...b };
      if (m) currentOptions = { ...currentOptions, ...m };
      await mf.dispose();
      await launch();
    },
    /** Fetch a path (or absolute URL) from the worker over its real port. */
    fetch(path, init) {
      return fetch(new URL(path, url), init);
    },
    async close() {
      if (closed) return;
      closed = true;
      await mf.dispose().catch(() => {});
      if (ownModel) await ownModel.close();
      if (ownDir) await rm(dir, { recursive: true, force: true });
    },
  };
  return handle;
}

/**
 * Open an agent WebSocket like useAgent does: ws://HOST/agents/<kebab(agent)>/<name>?_pk=<uuid>&<query>.
 * @param {string} url worker base URL (http://127.0.0.1:PORT)
 * @param {string} agent binding/class name (`ChatAgent`) or its kebab form (`chat-agent`)
 * @param {string} name instance name (inserted without URL-encoding, as the client does)
 * @param {{pk?: string, query?: Record<string,string>|string, open?: boolean}} [opts]
 * @returns {Promise<Client>} resolves once open (unless open:false)
 *
 * Client: { ws, pk, url, frames /* every received frame, parsed JSON ({type:'__raw', data} if not JSON) *\/,
 *   cursor /* index waitFor starts scanning from *\/, send(obj|string), waitFor(pred, timeoutMs=5000),
 *   waitForClose(timeoutMs=5000) → {code, reason}, mark() → frames.length, since(mark) → frames[mark..],
 *   closed /* promise of {code, reason} *\/, isOpen, close(code?, reason?) → Promise<{code, reason}> }
 */
export async function connect(url, agent, name, { pk = randomUUID(), query, open = true, headers } = {}) {
  const base = new URL(url);
  base.protocol = base.protocol === 'https:' ? 'wss:' : 'ws:';
  const params = new URLSearchParams({ _pk: pk });
  if (typeof query === 'string') {
    for (const [k, v] of new URLSearchParams(query)) params.append(k, v);
  } else if (query) {
    for (const [k, v] of Object.entries(query)) params.append(k, String(v));
  }
  const wsUrl = `${base.origin}/agents/${kebab(agent)}/${name}?${params}`;
  const ws = new WebSocket(wsUrl, headers ? { headers } : undefined);
  const frames = [];
  const waiters = new Set();
  let closeInfo = null;
  let resolveClosed;
  const closed = new Promise((r) => { resolveClosed = r; });

  const client = {
    ws,
    pk,
    url: wsUrl,
    frames,
    cursor: 0,
    get isOpen() { return ws.readyState === WebSocket.OPEN; },
    closed,
    send(obj) {
      ws.send(typeof obj === 'string' ? obj : JSON.stringify(obj));
    },
    mark() { return frames.length; },
    since(mark) { return frames.slice(mark); },
    /**
     * Resolve with the first frame at index >= cursor matching `pred` (a function, or a frame
     * `type` string), and move the cursor past it. Rejects after timeoutMs (listing recent frames)
     * or if the socket closes first.
     */
    waitFor(pred, timeoutMs = 5000) {
      const match = typeof pred === 'string' ? (f) => f?.type === pred : pred;
      const scan = () => {
        for (let i = client.cursor; i < frames.length; i++) {
          if (match(frames[i])) {
            client.cursor = i + 1;
            return { frame: frames[i] };
          }
        }
        return null;
      };
      const hit = scan();
      if (hit) return Promise.resolve(hit.frame);
      return new Promise((resolve, reject) => {
        const waiter = {
          check() {
            const h = scan();
            if (h) { done(); resolve(h.frame); }
          },
          closed() {
            done();
            reject(new Error(`socket closed (${closeInfo?.code}) while waiting for ${describe(pred)}; recent frames:\n${recent()}`));
          },
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${describe(pred)}; frames since cursor:\n${recent()}`));
        }, timeoutMs);
        const done = () => { clearTimeout(timer); waiters.delete(waiter); };
        waiters.add(waiter);
        if (closeInfo) waiter.closed();
      });
    },
    waitForClose(timeoutMs = 5000) {
      return withTimeout(closed, timeoutMs, 'socket close');
    },
    close(code = 1000, reason = '') {
      if (ws.readyState === WebSocket.CONNECTING || ws.readyState === WebSocket.OPEN) ws.close(code, reason);
      return withTimeout(closed, 5000, 'socket close').catch(() => {
        ws.terminate();
        return closed;
      });
    },
  };
  const recent = () => frames.slice(client.cursor).slice(-20).map((f) => '  ' + JSON.stringify(f).slice(0, 300)).join('\n') || '  (none)';

  ws.on('message', (data, isBinary) => {
    const text = isBinary ? null : data.toString('utf8');
    let frame;
    try {
      frame = text === null ? { type: '__binary', data } : JSON.parse(text);
    } catch {
      frame = { type: '__raw', data: text };
    }
    frames.push(frame);
    for (const w of [...waiters]) w.check();
  });
  ws.on('close', (code, reason) => {
    closeInfo = { code, reason: reason.toString('utf8') };
    resolveClosed(closeInfo);
    for (const w of [...waiters]) w.closed();
  });
  ws.on('error', () => { /* surfaced through 'close' / the open promise */ });

  if (open) {
    await new Promise((resolve, reject) => {
      const onOpen = () => { cleanup(); resolve(); };
      const onError = (err) => { cleanup(); reject(new Error(`WebSocket to ${wsUrl} failed: ${err.message}`)); };
      const onUnexpected = (_req, res) => {
        cleanup();
        reject(new Error(`WebSocket to ${wsUrl} rejected with HTTP ${res.statusCode}`));
        res.resume();
      };
      const cleanup = () => {
        ws.off('open', onOpen);
        ws.off('error', onError);
        ws.off('unexpected-response', onUnexpected);
      };
      ws.on('open', onOpen);
      ws.on('error', onError);
      ws.on('unexpected-response', onUnexpected);
    });
  }
  return client;
}

function describe(pred) {
  return typeof pred === 'string' ? `frame type ${pred}` : pred.name || String(pred).slice(0, 120);
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * The exact frame useAgentChat sends for sendMessage/regenerate:
 * {id, init:{method:'POST', body: JSON.stringify({messages, trigger:'submit-message', ...extraBody})}, type:'cf_agent_use_chat_request'}
 */
export function chatRequest(id, messages, extraBody = {}) {
  return {
    id,
    init: { method: 'POST', body: JSON.stringify({ messages, trigger: 'submit-message', ...extraBody }) },
    type: 'cf_agent_use_chat_request',
  };
}

/** A UIMessage as the AI SDK's sendMessage({text}) creates it. */
export function userMessage(id, text) {
  return { id, role: 'user', parts: [{ type: 'text', text }] };
}

/** GET <url>/agents/<kebab(agent)>/<name>/get-messages → parsed UIMessage[] (throws on non-2xx). */
export async function getMessages(url, agent, name, { query } = {}) {
  const u = new URL(`/agents/${kebab(agent)}/${name}/get-messages`, url);
  if (query) for (const [k, v] of Object.entries(query)) u.searchParams.append(k, String(v));
  const res = await fetch(u);
  if (!res.ok) throw new Error(`GET ${u} → ${res.status}: ${await res.text()}`);
  const text = await res.text();
  return text ? JSON.parse(text) : [];
}

// ---- small frame helpers -------------------------------------------------------------------

/** Predicate: a cf_agent_use_chat_response frame of request `id` (any id if omitted). */
export const isResponse = (id) => (f) => f?.type === 'cf_agent_use_chat_response' && (id === undefined || f.id === id);
/** Predicate: the terminal (done:true) response frame of request `id`. */
export const isDone = (id) => (f) => isResponse(id)(f) && f.done === true;

/** Parsed UIMessageChunks of request `id` among `frames` (non-error, non-empty bodies, in order). */
export function chunksOf(frames, id) {
  return frames
    .filter((f) => isResponse(id)(f) && !f.error && typeof f.body === 'string' && f.body !== '')
    .map((f) => JSON.parse(f.body));
}

/** Concatenated text-delta of request `id` among `frames`. */
export function textOf(frames, id) {
  return chunksOf(frames, id).filter((c) => c.type === 'text-delta').map((c) => c.delta).join('');
}

/** Send a user message as a chat request and wait for its terminal frame; returns {done, chunks, text}. */
export async function sendAndWait(client, id, messages, extraBody = {}, timeoutMs = 10000) {
  const mark = client.mark();
  client.send(chatRequest(id, messages, extraBody));
  const done = await client.waitFor(isDone(id), timeoutMs);
  const frames = client.since(mark);
  return { done, chunks: chunksOf(frames, id), text: textOf(frames, id) };
}

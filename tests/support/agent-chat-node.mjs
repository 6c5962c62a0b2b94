// Runs the REAL `useAgentChat` (agents/chat/react, or @cloudflare/think/react's wrapper of it) +
// `useAgent` (agents/react) hooks in Node, with
// React 19's own renderer (react-dom/client), so end-to-end tests drive the agent through the
// exact client code a browser app uses. The component renders nothing, so React never creates
// DOM nodes: a container stub with the handful of fields react-dom's root touches is enough, plus
// `window.event` (read when scheduling updates). Sockets use the `ws` package (Node 20 has no
// global WebSocket), wrapped to record every frame the client sends and receives and to deliver
// messages one per task as browsers do. DEBUG_AGENT_CHAT=1 logs every render.
// Owns: mountAgentChat.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import WS from 'ws';
import React from 'react';
import { createRoot } from 'react-dom/client';

// react-dom reads `window.event` to pick an update priority; nothing else of `window` is needed
// because the tree renders no host elements. Keep any real window (never the case under node:test).
if (typeof globalThis.window === 'undefined') globalThis.window = { event: undefined };
if (typeof globalThis.WebSocket === 'undefined') globalThis.WebSocket = WS;
globalThis.IS_REACT_ACT_ENVIRONMENT = false;

// Each mounted hook is one browser tab, so it gets its own copy of the hook modules: they keep
// module-level caches (the get-messages request cache, the query cache) that two tabs never share.
const AGENT_REACT_URL = import.meta.resolve('agents/react');
const AGENT_CHAT_REACT_URL = import.meta.resolve('agents/chat/react');
// @cloudflare/think/react wraps agents/chat/react's hook. Its published file is loaded per tab
// with its one import pointed at that tab's copy of agents/chat/react (Node would otherwise share
// one copy, and its caches, between the tabs of a test).
const THINK_REACT_SOURCE = readFileSync(fileURLToPath(import.meta.resolve('@cloudflare/think/react')), 'utf8');
const THINK_IMPORT = /from\s*["']agents\/chat\/react["']/g;
if ((THINK_REACT_SOURCE.match(THINK_IMPORT) ?? []).length !== 1) {
  throw new Error('@cloudflare/think/react no longer imports agents/chat/react exactly once; update this harness');
}
let tabs = 0;
async function tabModules(hook) {
  const tab = ++tabs;
  const { useAgent } = await import(`${AGENT_REACT_URL}?tab=${tab}`);
  const agentsChat = `${AGENT_CHAT_REACT_URL}?tab=${tab}`;
  if (hook === 'agents') return { useAgent, useAgentChat: (await import(agentsChat)).useAgentChat };
  if (hook !== 'think') throw new Error(`unknown chat hook ${hook} (agents or think)`);
  const source = THINK_REACT_SOURCE.replace(THINK_IMPORT, `from ${JSON.stringify(agentsChat)}`);
  const { useAgentChat } = await import(`data:text/javascript;charset=utf-8,${encodeURIComponent(source)}`);
  return { useAgent, useAgentChat };
}

const noop = () => {};

function containerStub() {
  const view = { HTMLIFrameElement: class HTMLIFrameElement {}, document: null };
  const doc = {
    nodeType: 9, activeElement: null, body: null, defaultView: view,
    addEventListener: noop, removeEventListener: noop,
  };
  view.document = doc;
  return {
    nodeType: 1, nodeName: 'DIV', tagName: 'DIV', textContent: '', firstChild: null,
    ownerDocument: doc, addEventListener: noop, removeEventListener: noop,
  };
}

/**
 * Mount `useAgent` + `useAgentChat` for agent `agent` instance `name` on the worker at `url`.
 * @param {object} o
 * @param {string} o.url worker base URL (http://127.0.0.1:PORT)
 * @param {string} o.name instance name
 * @param {string} [o.agent] agent class (`ChatAgent`)
 * @param {'agents'|'think'} [o.hook] whose `useAgentChat`: agents/chat/react as it is (it pushes
 *   its transcript to the server after each change), or @cloudflare/think/react (the same hook with
 *   that push turned off, as Think apps use it). Default `think`.
 * @param {object|((ctx) => object)} [o.chatOptions] extra useAgentChat options (tools, onToolCall…);
 *   a function receives {get chat()} so callbacks can reach the latest hook result.
 * @returns {Promise<{chat, frames, sent, errors, waitFor(pred, timeoutMs?), settled(quietMs?), unmount()}>}
 *   Resolves once the socket is connected (connect frames received); the hook may be resuming.
 *   `chat` is the latest hook result; `frames`/`sent` are parsed frames received/sent by its socket.
 */
export async function mountAgentChat({ url, name, agent = 'ChatAgent', hook = 'think', chatOptions = {}, agentOptions = {} }) {
  const host = new URL(url).host;
  const frames = [];
  const sent = [];
  const errors = [];
  const listeners = new Set();
  let latest = null;
  let unmounted = false;
  const notify = () => { for (const l of [...listeners]) l(); };

  class RecordingWebSocket extends WS {
    constructor(address, protocols, options) {
      // Browsers deliver each message as its own task (microtasks run in between); ws by default
      // emits every message of a TCP read in one tick, which no browser does.
      super(address, protocols, { ...options, allowSynchronousEvents: false });
      this.on('message', (data, isBinary) => {
        if (isBinary) return;
        try { frames.push(JSON.parse(data.toString('utf8'))); } catch { frames.push({ type: '__raw', data: data.toString('utf8') }); }
        notify();
      });
    }
    send(data, ...rest) {
      try { sent.push(JSON.parse(data)); } catch { sent.push({ type: '__raw', data }); }
      return super.send(data, ...rest);
    }
  }

  const { useAgent, useAgentChat } = await tabModules(hook);
  const ctx = { get chat() { return latest; } };
  const options = typeof chatOptions === 'function' ? chatOptions(ctx) : chatOptions;

  function App() {
    const agentConn = useAgent({ agent, name, host, WebSocket: RecordingWebSocket, ...agentOptions });
    const chat = useAgentChat({
      agent: agentConn,
      onError: (e) => errors.push(e),
      ...options,
    });
    latest = chat;
    if (process.env.DEBUG_AGENT_CHAT) {
      console.log(`[${name}] render`, chat.status, `srv=${chat.isServerStreaming}`, chat.messages.map((m) => `${m.role}:${m.id.slice(0, 4)}(${m.parts.length})`).join(' '));
    }
    React.useEffect(notify);
    return null;
  }

  const root = createRoot(containerStub(), {
    onUncaughtError: (e) => errors.push(e),
    onRecoverableError: (e) => errors.push(e),
  });
  root.render(React.createElement(React.Suspense, { fallback: null }, React.createElement(App)));

  const handle = {
    get chat() { return latest; },
    frames,
    sent,
    errors,
    /** Resolve with pred(chat)'s truthy value once it holds (checked after every render/frame). */
    waitFor(pred, timeoutMs = 15000) {
      return new Promise((resolve, reject) => {
        let timer;
        const check = () => {
          let value;
          try { value = latest && pred(latest); } catch (e) { value = undefined; }
          if (value) { listeners.delete(check); clearTimeout(timer); resolve(value); }
        };
        timer = setTimeout(() => {
          listeners.delete(check);
          const state = latest ? JSON.stringify({ status: latest.status, messages: latest.messages }, null, 1).slice(0, 3000) : '(not rendered)';
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${pred.name || String(pred).slice(0, 160)}; errors: ${errors.map(String).join('; ') || 'none'}; state: ${state}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    /** Resolve once nothing was rendered or received for `quietMs` (after in-flight work settled). */
    settled(quietMs = 150, timeoutMs = 15000) {
      return new Promise((resolve, reject) => {
        let quiet;
        const arm = () => { clearTimeout(quiet); quiet = setTimeout(done, quietMs); };
        const done = () => { listeners.delete(arm); clearTimeout(limit); resolve(latest); };
        const limit = setTimeout(() => { listeners.delete(arm); clearTimeout(quiet); reject(new Error('never settled')); }, timeoutMs);
        listeners.add(arm);
        arm();
      });
    },
    async unmount() {
      if (unmounted) return;
      unmounted = true;
      root.unmount(); // closes the socket (usePartySocket's cleanup)
      await new Promise((r) => setTimeout(r, 20));
    },
  };
  // Connected: the connect frames arrived (the hook may already be resuming a live stream).
  await handle.waitFor(() => frames.some((f) => f.type === 'cf_agent_mcp_servers'));
  return handle;
}

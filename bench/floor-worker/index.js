// The runtime's floor: the least a chat Durable Object can do and still look ready to the
// benchmark's client. It accepts a hibernatable WebSocket, answers the resume probe, stores every
// posted message it has not stored yet as one SQLite row, streams one model completion per request
// (passing text deltas through), stores the reply as one row and broadcasts the transcript. No
// tools, no recovery, no chunk log, no concurrency rules: whatever our agent costs above this is
// ours to explain. The model is sent the stored conversation as role/text pairs (the same
// conversation our agent sends). It answers under any `/agents/<class>/<name>` path, so the
// client's URLs are the same as for the agent it is compared with.
// Vars for experiments: FLOOR_PROMPT_ONLY=1 sends the model only the new message;
// FLOOR_NO_FETCH=1 makes up the reply locally (40 words) instead of calling the model;
// FLOOR_NO_SQL=1 keeps the transcript in memory instead of SQLite.
import { DurableObject } from 'cloudflare:workers';

export class FloorAgent extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.memory = [];
    this.stored = new Set();
    if (!env.FLOOR_NO_SQL) ctx.storage.sql.exec('CREATE TABLE IF NOT EXISTS msgs (seq INTEGER PRIMARY KEY, id TEXT UNIQUE, body TEXT NOT NULL)');
  }

  /** Stores the posted messages it does not hold yet (by id), one row each. */
  storeNew(messages) {
    for (const m of messages) {
      if (this.env.FLOOR_NO_SQL) {
        if (this.stored.has(m.id)) continue;
        this.stored.add(m.id);
        this.memory.push(m);
      } else {
        this.ctx.storage.sql.exec('INSERT OR IGNORE INTO msgs (id, body) VALUES (?, ?)', m.id, JSON.stringify(m));
      }
    }
  }

  transcript() {
    if (this.env.FLOOR_NO_SQL) return this.memory;
    return this.ctx.storage.sql.exec('SELECT body FROM msgs ORDER BY seq').toArray().map((r) => JSON.parse(r.body));
  }

  async fetch() {
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    server.send(JSON.stringify({ type: 'cf_agent_identity', name: 'floor', agent: 'floor-agent' }));
    server.send(JSON.stringify({ type: 'cf_agent_chat_messages', messages: this.transcript() }));
    return new Response(null, { status: 101, webSocket: client });
  }

  broadcast(frame) {
    const s = JSON.stringify(frame);
    for (const ws of this.ctx.getWebSockets()) ws.send(s);
  }

  /** Text deltas of the model's streamed reply to `messages` (OpenAI chat completions SSE). */
  async *modelDeltas(messages) {
    if (this.env.FLOOR_NO_FETCH) {
      for (let i = 0; i < 40; i++) {
        if (this.env.FLOOR_WORD_DELAY_MS) await new Promise((r) => setTimeout(r, Number(this.env.FLOOR_WORD_DELAY_MS)));
        yield `${i ? ' ' : ''}word${i}`;
      }
      return;
    }
    const res = await fetch(`${this.env.OPENAI_BASE_URL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.env.OPENAI_API_KEY}` },
      body: JSON.stringify({ model: this.env.MODEL, stream: true, messages }),
    });
    const decoder = new TextDecoder();
    let pending = '';
    for await (const bytes of this.env.FLOOR_BYOB ? byobChunks(res.body) : res.body) {
      pending += decoder.decode(bytes, { stream: true });
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (!line.startsWith('data:') || line === 'data: [DONE]') continue;
        const delta = JSON.parse(line.slice(5)).choices?.[0]?.delta?.content;
        if (delta) yield delta;
      }
    }
  }

  async webSocketMessage(ws, data) {
    const frame = JSON.parse(data);
    if (frame.type === 'cf_agent_stream_resume_request') {
      ws.send(JSON.stringify({ type: 'cf_agent_stream_resume_none', probeId: frame.probeId }));
      return;
    }
    if (frame.type !== 'cf_agent_use_chat_request') return;
    const { messages } = JSON.parse(frame.init.body);
    const user = messages[messages.length - 1];
    this.storeNew(messages);
    const send = (body, done = false) => this.broadcast({ type: 'cf_agent_use_chat_response', id: frame.id, body, done });
    let text = '';
    for (let i = 0; i < Number(this.env.FLOOR_EXTRA_FETCHES ?? 0); i++) {
      for await (const _ of this.modelDeltas([{ role: 'user', content: 'extra' }])); // eslint-disable-line no-unused-vars
    }
    // The model is sent the stored conversation, as any chat agent sends it (with
    // FLOOR_PROMPT_ONLY=1 only the new message).
    const history = this.env.FLOOR_PROMPT_ONLY ? [user] : this.transcript();
    const prompt = history.map((m) => ({ role: m.role, content: m.parts.map((p) => p.text ?? '').join('') }));
    for await (const delta of this.modelDeltas(prompt)) {
      text += delta;
      if (!this.env.FLOOR_NO_DELTAS) send(JSON.stringify({ type: 'text-delta', id: 't', delta }));
    }
    const reply = { id: crypto.randomUUID(), role: 'assistant', parts: [{ type: 'text', text }] };
    this.storeNew([reply]);
    this.broadcast({ type: 'cf_agent_chat_messages', messages: this.transcript() });
    send('', true);
  }
}

/** Body chunks read through a BYOB reader into one reused 16 KiB buffer. */
async function* byobChunks(body) {
  const reader = body.getReader({ mode: 'byob' });
  let buffer = new ArrayBuffer(16384);
  for (;;) {
    const { value, done } = await reader.read(new Uint8Array(buffer));
    if (done) return;
    yield value;
    buffer = value.buffer;
  }
}

export default {
  fetch(request, env) {
    const m = /^\/agents\/[^/]+\/([^/?]+)/.exec(new URL(request.url).pathname);
    if (!m) return new Response('not found', { status: 404 });
    return env.FloorAgent.get(env.FloorAgent.idFromName(m[1])).fetch(request);
  },
};

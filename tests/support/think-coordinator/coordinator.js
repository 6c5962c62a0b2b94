// A real @cloudflare/think agent used as the parent of the Rust agent in the end-to-end tests: its
// routes run the calls a Think coordinator makes on a child's Durable Object stub — `chat()` with
// the sub-agent code of the Think documentation, the durable submissions and the message methods —
// (and `runTurn` streaming into the same recorder, `saveMessages` with a signal, two submits at
// once, a delete by date, the author's own methods through `call`)
// against the `ChatAgent` binding (the Rust worker's class, reached over Durable Object RPC) and
// answer with what the coordinator observed. It runs no model of its own. Bundled by
// tests/support/think-coordinator.mjs.
import { Think } from '@cloudflare/think';
import { routeAgentRequest } from 'agents';
import { RpcTarget } from 'cloudflare:workers';

/** Records the child's stream as Think's StreamCallback receives it. */
class Recorder extends RpcTarget {
  constructor({ abortAfterEvents, controller }) {
    super();
    this.started = null;
    this.events = [];
    this.done = 0;
    this.errors = [];
    this.abortAfterEvents = abortAfterEvents;
    this.controller = controller;
  }
  onStart({ requestId }) {
    this.started = requestId;
  }
  onEvent(json) {
    this.events.push(JSON.parse(json));
    if (this.abortAfterEvents && this.events.length === this.abortAfterEvents) this.controller.abort();
  }
  onDone() {
    this.done += 1;
  }
  onError(message) {
    this.errors.push(message);
  }
}

export class ThinkCoordinator extends Think {
  getModel() {
    throw new Error('the coordinator runs no model of its own');
  }

  async onRequest(request) {
    const url = new URL(request.url);
    const body = request.method === 'POST' ? await request.json() : {};
    const child = this.env.ChatAgent.get(this.env.ChatAgent.idFromName(body.child ?? 'child'));
    const route = url.pathname.split('/').pop();
    try {
      if (route === 'delegate') return Response.json(await this.delegate(child, body));
      if (route === 'call') return Response.json({ result: (await child[body.method](...(body.args ?? []))) ?? null });
      if (route === 'run-turn-stream') return Response.json(await this.streamTurn(child, body));
      if (route === 'save-abort') {
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), body.abortAfterMs ?? 300);
        const result = await child.saveMessages(body.messages, { signal: controller.signal });
        clearTimeout(timer);
        return Response.json({ result });
      }
      if (route === 'submit-twice') {
        // Every key submitted twice, all calls at once (so some land in the same millisecond).
        const calls = body.keys.flatMap((key) => [0, 1].map(() => child.submitMessages(body.messages, { idempotencyKey: key })));
        return Response.json({ result: await Promise.all(calls) });
      }
      if (route === 'delete-before') {
        const result = await child.deleteSubmissions({ ...body.options, completedBefore: new Date(body.before) });
        return Response.json({ result });
      }
      if (route === 'internal-fetch') {
        const response = await child.fetch(`https://agent/agents/chat-agent/${body.child}/${body.path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-durable-chat-channel': body.credential },
          body: JSON.stringify(body.call ?? {}),
        });
        return Response.json({ status: response.status, text: await response.text() });
      }
    } catch (error) {
      return Response.json({ threw: String(error?.message ?? error) });
    }
    return new Response('no such route', { status: 404 });
  }

  /** `runTurn({mode: "stream"})` into a recorder. */
  async streamTurn(child, { input }) {
    const callback = new Recorder({});
    let threw = null;
    try {
      await child.runTurn({ mode: 'stream', input, callback });
    } catch (error) {
      threw = String(error?.message ?? error);
    }
    return { requestId: callback.started, events: callback.events, done: callback.done, errors: callback.errors, threw };
  }

  /** One delegated turn, with the seed's code. */
  async delegate(child, { message, tool = 'answer', abortAfterEvents = 0 }) {
    const controller = new AbortController();
    const signal = controller.signal;
    const callback = new Recorder({ abortAfterEvents, controller });
    const toolCalls = [];
    const runClientTool = async (toolName, input) => {
      toolCalls.push({ toolName, input });
      if (tool === 'throw') throw new Error('the coordinator cannot read the timezone');
      return { timezone: 'Europe/Paris', asked: toolName };
    };
    const began = Date.now();
    let threw = null;
    try {
      await child.chat(message, callback, {
        signal,
        clientTools: [{ name: 'get_user_timezone', description: 'The user\u2019s timezone.', parameters: { type: 'object' } }],
        onClientToolCall: async ({ toolName, input }) => runClientTool(toolName, input),
      });
    } catch (error) {
      threw = String(error?.message ?? error);
    }
    return {
      requestId: callback.started,
      events: callback.events,
      done: callback.done,
      errors: callback.errors,
      toolCalls,
      threw,
      ms: Date.now() - began,
    };
  }
}

export default {
  async fetch(request, env) {
    return (await routeAgentRequest(request, env)) ?? new Response('Not found', { status: 404 });
  },
};

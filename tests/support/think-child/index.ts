// A plain @cloudflare/think agent for the end-to-end tests of a Rust parent calling a JavaScript
// child over Durable Object RPC: class `ThinkChild` on the scripted OpenAI-compatible model at
// env.OPENAI_BASE_URL, with no tools of its own beside Think's workspace tools (a parent offers client tools per call). Nothing in it
// knows about the Rust worker: the parent reaches it through a Durable Object binding with
// `script_name`. Built by build.mjs (esbuild) into target/think-child/index.js.
import { Think } from '@cloudflare/think';
import { routeAgentRequest } from 'agents';
import { createOpenAI } from '@ai-sdk/openai';

interface Env {
  ThinkChild: DurableObjectNamespace;
  OPENAI_BASE_URL: string;
  MODEL?: string;
}

export class ThinkChild extends Think<Env> {
  maxSteps = 5;

  getModel() {
    const provider = createOpenAI({ baseURL: this.env.OPENAI_BASE_URL, apiKey: 'test-key' });
    return provider.chat(this.env.MODEL || 'scripted-model');
  }

  getSystemPrompt() {
    return 'You are a helper agent.';
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeAgentRequest(request, env)) || new Response('Not found', { status: 404 });
  },
};

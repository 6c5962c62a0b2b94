// The TypeScript reference for bench/run.mjs: a minimal @cloudflare/think agent with the same
// model settings, system prompt and tools as our Rust demo agent (src/demo.rs):
//   - OpenAI-compatible chat-completions provider at env.OPENAI_BASE_URL, model env.MODEL
//   - system prompt "You are a helpful assistant in a demo chat. Use the tools when they help."
//   - get_weather {city} → {city, tempC: 21}; delete_file {path} → {deleted: path}, needsApproval
//   - at most 10 steps per turn, messageConcurrency from env.MESSAGE_CONCURRENCY (default queue)
// Think also merges its workspace file tools into every turn; beforeTurn restricts the model to
// the two demo tools (activeTools), so the model sees the same tool list as ours.
// Built by bench/think-worker/build.mjs into dist/index.js (ESM, nodejs_compat).
import { Think } from '@cloudflare/think';
import { routeAgentRequest } from 'agents';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { tool } from 'ai';
import { z } from 'zod';

interface Env {
  ThinkAgent: DurableObjectNamespace;
  OPENAI_BASE_URL: string;
  OPENAI_API_KEY?: string;
  MODEL?: string;
  MESSAGE_CONCURRENCY?: string;
}

const SYSTEM_PROMPT = 'You are a helpful assistant in a demo chat. Use the tools when they help.';
const TOOL_NAMES = ['get_weather', 'delete_file'];

export class ThinkAgent extends Think<Env> {
  maxSteps = 10;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const mode = env.MESSAGE_CONCURRENCY;
    if (mode === 'queue' || mode === 'latest' || mode === 'merge' || mode === 'drop') {
      this.messageConcurrency = mode;
    }
  }

  getModel() {
    const provider = createOpenAICompatible({
      name: 'openai',
      baseURL: this.env.OPENAI_BASE_URL,
      apiKey: this.env.OPENAI_API_KEY || 'unused',
      includeUsage: true,
    });
    return provider.chatModel(this.env.MODEL || 'gpt-4o-mini');
  }

  getSystemPrompt() {
    return SYSTEM_PROMPT;
  }

  getTools() {
    return {
      get_weather: tool({
        description: 'Current weather for a city.',
        inputSchema: z.object({ city: z.string().describe('City name, e.g. "Paris".') }),
        execute: async ({ city }) => ({ city, tempC: 21 }),
      }),
      delete_file: tool({
        description: 'Delete a file by path.',
        inputSchema: z.object({ path: z.string().describe('Path of the file to delete.') }),
        needsApproval: true,
        execute: async ({ path }) => ({ deleted: path }),
      }),
    };
  }

  beforeTurn() {
    return { activeTools: TOOL_NAMES };
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeAgentRequest(request, env)) || new Response('Not found', { status: 404 });
  },
};

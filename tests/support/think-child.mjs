// A Rust worker and a real @cloudflare/think worker in one Miniflare session, for calls from a Rust
// parent to a JavaScript child over Durable Object RPC. The Rust worker (`agent`, the build's modules)
// gets a binding `ThinkChild` to class `ThinkChild` of the second worker (`think-child`, bundled from
// tests/support/think-child/ by build.mjs), the way wrangler.toml names a class of another script:
//   [[durable_objects.bindings]] name = "ThinkChild", class_name = "ThinkChild", script_name = "think-child"
// Both use the same scripted model server. Owns: startWithThinkChild.
import { Miniflare, convertV4MiniflareOptions } from 'miniflare';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILD_DIR, DEFAULT_BINDINGS, agentWorkerOptions } from './harness.mjs';
import { startModelServer } from './model-server.mjs';
import { buildThinkChild } from './think-child/build.mjs';

let bundled = null;

/**
 * Start both workers; closed when test context `t` ends.
 * @returns {Promise<{url: string, mf: Miniflare, model: object, thinkFetch: (path: string, init?: object) => Promise<Response>}>}
 *   `url` is the Rust worker's; `thinkFetch` reaches the Think worker's own fetch handler.
 */
export async function startWithThinkChild(t, { buildDir = BUILD_DIR } = {}) {
  bundled ??= buildThinkChild();
  const script = await bundled;
  const model = await startModelServer();
  const dir = await mkdtemp(join(tmpdir(), 'durable-chat-think-'));
  const agent = agentWorkerOptions({
    buildDir,
    bindings: { ...DEFAULT_BINDINGS, OPENAI_BASE_URL: model.url },
  });
  agent.durableObjects = {
    ...agent.durableObjects,
    ThinkChild: { className: 'ThinkChild', scriptName: 'think-child', useSQLite: true },
  };
  const mf = new Miniflare(convertV4MiniflareOptions({
    host: '127.0.0.1', port: 0, cf: false, resourcePersistencePath: dir,
    workers: [
      { name: 'agent', ...agent },
      {
        name: 'think-child',
        modules: [{ type: 'ESModule', path: script }],
        compatibilityDate: agent.compatibilityDate,
        compatibilityFlags: ['nodejs_compat'],
        durableObjects: { ThinkChild: { className: 'ThinkChild', useSQLite: true } },
        bindings: { OPENAI_BASE_URL: model.url, MODEL: 'scripted-model' },
      },
    ],
  }));
  t.after(async () => {
    await mf.dispose().catch(() => {});
    await model.close();
    await rm(dir, { recursive: true, force: true });
  });
  const ready = await mf.ready;
  const think = await mf.getWorker('think-child');
  return {
    url: `http://127.0.0.1:${ready.port}`,
    mf,
    model,
    thinkFetch: (path, init) => think.fetch(new URL(path, 'http://think.local').toString(), init),
  };
}

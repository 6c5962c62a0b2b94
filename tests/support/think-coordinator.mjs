// Runs the Rust worker and a real @cloudflare/think coordinator (tests/support/think-coordinator/)
// in one Miniflare session: the coordinator's `ChatAgent` binding is the Rust worker's class, so
// its calls are Durable Object RPC calls to the bridge class the build generates. Owns:
// buildCoordinator (the esbuild bundle, into target/think-coordinator/), startWithCoordinator.
import { bundleThinkWorker } from '../../scripts/think-bundle.mjs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Miniflare, convertV4MiniflareOptions } from 'miniflare';
import { ROOT, COMPATIBILITY_DATE, DEFAULT_BINDINGS, TEST_BUILD_DIR, agentWorkerOptions } from './harness.mjs';
import { startModelServer } from './model-server.mjs';

const OUT = join(ROOT, 'target', 'think-coordinator', 'index.js');

export async function buildCoordinator() {
  const entry = join(ROOT, 'tests', 'support', 'think-coordinator', 'coordinator.js');
  return bundleThinkWorker(entry, OUT, { logLevel: 'error' });
}

/**
 * The Rust test build (worker `agents`, first: `url` is its port) and the coordinator (worker
 * `think`) in one session. `coordinator(name, route, body)` POSTs to the coordinator instance
 * `name`'s route and returns its JSON. `bindings` go to the Rust worker.
 */
export async function startWithCoordinator({ bindings = {} } = {}) {
  const bundle = await buildCoordinator();
  const model = await startModelServer();
  const dir = await mkdtemp(join(tmpdir(), 'think-coordinator-'));
  // A signal crosses Durable Object RPC only with this (experimental) flag on both sides.
  const flags = ['enable_abortsignal_rpc'];
  const agents = agentWorkerOptions({
    buildDir: TEST_BUILD_DIR,
    bindings: { ...DEFAULT_BINDINGS, OPENAI_BASE_URL: model.url, DEBUG_TOOLS: '1', INTERNAL_FETCH_FALLBACK: '0', ...bindings },
    options: { compatibilityFlags: flags },
  });
  const mf = new Miniflare(convertV4MiniflareOptions({
    workers: [
      { name: 'agents', ...agents },
      {
        name: 'think',
        modules: [{ type: 'ESModule', path: bundle }],
        modulesRoot: join(bundle, '..'),
        compatibilityDate: COMPATIBILITY_DATE,
        compatibilityFlags: ['nodejs_compat', ...flags],
        durableObjects: {
          ThinkCoordinator: { className: 'ThinkCoordinator', useSQLite: true },
          ChatAgent: { className: 'ChatAgent', scriptName: 'agents' },
        },
      },
    ],
    resourcePersistencePath: dir,
    cf: false,
    host: '127.0.0.1',
    port: 0,
  }));
  const url = (await mf.ready).origin;
  const think = await mf.getWorker('think');
  return {
    url,
    mf,
    model,
    async coordinator(name, route, body = {}) {
      const response = await think.fetch(`http://think/agents/think-coordinator/${name}/${route}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`coordinator ${route}: ${response.status} ${text}`);
      return JSON.parse(text);
    },
    async close() {
      await mf.dispose().catch(() => {});
      await model.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

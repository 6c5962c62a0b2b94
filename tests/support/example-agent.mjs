// The crate used as a library: examples/support-agent's build (run `bash
// examples/support-agent/build.sh` first) on workerd under Miniflare, with the scripted model
// server and a throw-away storage directory. Owns: EXAMPLE_AGENT, startExample.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Miniflare, convertV4MiniflareOptions } from 'miniflare';
import { COMPATIBILITY_DATE, ROOT } from './harness.mjs';
import { startModelServer } from './model-server.mjs';

const BUILD = join(ROOT, 'examples', 'support-agent', 'build');

/** The example's Durable Object class (and binding). */
export const EXAMPLE_AGENT = 'SupportAgentDO';

/**
 * Starts the example worker for test `t` (stopped and cleaned up after it). Returns { url, model,
 * logs }: the worker's origin, its scripted model server and the Worker's log lines so far.
 */
export async function startExample(t) {
  for (const f of ['index.js', 'index_bg.wasm']) {
    assert.ok(existsSync(join(BUILD, f)), `${join(BUILD, f)} missing: run bash examples/support-agent/build.sh`);
  }
  const model = await startModelServer();
  const dir = mkdtempSync(join(tmpdir(), 'support-agent-'));
  const logs = [];
  const mf = new Miniflare(convertV4MiniflareOptions({
    modules: [
      { type: 'ESModule', path: join(BUILD, 'index.js') },
      { type: 'CompiledWasm', path: join(BUILD, 'index_bg.wasm') },
    ],
    modulesRoot: BUILD,
    compatibilityDate: COMPATIBILITY_DATE,
    durableObjects: { [EXAMPLE_AGENT]: { className: EXAMPLE_AGENT, useSQLite: true } },
    resourcePersistencePath: dir,
    cf: false,
    host: '127.0.0.1',
    port: 0,
    bindings: { OPENAI_BASE_URL: model.url, MODEL: 'scripted-model' },
    handleStructuredLogs: (log) => logs.push(log.message),
  }));
  const url = new URL(await mf.ready).origin;
  t.after(async () => {
    await mf.dispose().catch(() => {});
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { url, model, logs };
}

// `wrangler deploy`, checked without network: `wrangler deploy --dry-run --outdir DIR` runs the
// build command (the optimised release build) and bundles the worker exactly as a deploy would,
// then this test reads what would be uploaded: both Durable Object classes exported and bound,
// the SQLite migration for both, the demo page inside the wasm, the wasm the release build made,
// none of the test build's debug routes and tools, and the RPC bridge classes as the entry's exports.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../support/harness.mjs';

const run = promisify(execFile);
const CLASSES = ['ChatAgent', 'Coordinator', 'ChatDirectory'];

test('wrangler deploy --dry-run bundles the release worker with every Durable Object class, their SQLite migrations and the demo page', { timeout: 600000 }, async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'durable-chat-deploy-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  const env = { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_LOG_PATH: join(out, 'logs') };
  delete env.WRANGLER_COMMAND;
  const { stdout } = await run(process.execPath, [join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js'), 'deploy', '--dry-run', '--outdir', join(out, 'bundle')], {
    cwd: ROOT, env, maxBuffer: 64 * 1024 * 1024,
  });
  assert.match(stdout, /--dry-run: exiting now/);
  assert.match(stdout, /build: (ok|up to date) \(release/, 'deploy runs the release build');
  for (const name of CLASSES) {
    assert.match(stdout, new RegExp(`env\\.${name} \\(${name}\\)\\s+Durable Object`), `${name} is bound`);
  }

  const files = readdirSync(join(out, 'bundle'));
  const js = readFileSync(join(out, 'bundle', 'index.js'), 'utf8');
  for (const name of CLASSES) {
    assert.match(js, new RegExp(`export\\s*\\{[^}]*\\b${name}\\b[^}]*\\}|export class ${name}\\b`), `${name} is exported by the bundle`);
  }
  // The entry is the RPC bridge: each class is the one that extends DurableObject (scripts/rpc-bridge.mjs).
  assert.match(js, /class extends DurableObject/, 'the bundle holds the RPC bridge');
  for (const name of CLASSES) {
    assert.match(js, new RegExp(`\\b${name} = agentClass\\(`), `${name} is exported as its bridge class`);
  }
  const wasmFile = files.find((f) => f.endsWith('.wasm'));
  assert.ok(wasmFile, `the bundle holds the wasm (${files.join(', ')})`);
  const wasm = readFileSync(join(out, 'bundle', wasmFile));
  assert.ok(wasm.equals(readFileSync(join(ROOT, 'target', 'worker-release', 'index_bg.wasm'))), 'it is the release build (LTO, wasm-opt)');
  const text = wasm.toString('latin1');
  assert.match(text, /<!doctype html>/i, 'the demo page is inside the wasm');
  assert.match(text, /<meta name="app-version" content="\d+\.\d+\.\d+"/, 'stamped with the crate version');
  // The test switches are compiled out of a deploy: no route, tool or var of theirs is in it.
  for (const needle of ['__debug/', 'fail-next-message-write', 'large_output', 'DEBUG_TOOLS', 'DEBUG_MEMORY']) {
    assert.ok(!text.includes(needle), `the deploy bundle holds no ${needle}`);
  }

  // The migration wrangler sends with the upload: read with wrangler's own config reader.
  const { unstable_readConfig } = await import(join(ROOT, 'node_modules', 'wrangler', 'wrangler-dist', 'cli.js'));
  const config = unstable_readConfig({ config: join(ROOT, 'wrangler.toml') });
  const created = config.migrations.flatMap((m) => m.new_sqlite_classes ?? []);
  assert.deepEqual(created.sort(), [...CLASSES].sort(), 'both classes are created as SQLite-backed');
  assert.deepEqual(config.durable_objects.bindings.map((b) => b.class_name).sort(), [...CLASSES].sort());
});

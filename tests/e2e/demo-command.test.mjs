// The README's demo command, as a user runs it: `bash scripts/demo.sh` (set-up, the scripted model
// server, `wrangler dev`, which builds the worker through wrangler.toml's build command, the quick
// dev build). Checks that the chat page is served on 127.0.0.1 and that a turn with a server tool
// completes over a real WebSocket, that the demo agent is connected to the repository's MCP server
// and a turn calls one of its tools, then stops everything the command started.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, chatRequest, userMessage, getMessages, isDone } from '../support/harness.mjs';
import { upgradeFrom } from '../support/e2e.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const STARTUP_MS = 240000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

/** Start `bash scripts/demo.sh` in its own process group; returns { url, output(), stop() }. */
async function startDemo() {
  const [port, modelPort, mcpPort] = [await freePort(), await freePort(), await freePort()];
  const state = mkdtempSync(join(tmpdir(), 'durable-chat-demo-'));
  const env = { ...process.env, PORT: String(port), MODEL_PORT: String(modelPort), MCP_PORT: String(mcpPort) };
  delete env.OPENAI_BASE_URL;
  delete env.MCP_DEMO_URL;
  const child = spawn('bash', ['scripts/demo.sh', '--persist-to', state], {
    cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
    await Promise.race([exited, sleep(10000)]);
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
    rmSync(state, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + STARTUP_MS;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`the demo command exited (${child.exitCode}) before serving:\n${output.slice(-3000)}`);
    }
    try {
      const res = await fetch(`${url}/`);
      if (res.status === 200) return { url, output: () => output, stop, page: await res.text() };
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the demo command did not serve ${url}/ within ${STARTUP_MS / 1000} s:\n${output.slice(-3000)}`);
    }
    await sleep(500);
  }
}

/**
 * startDemo, tried twice when the first attempt died in wrangler's own file-watch restart (its
 * watcher can report a change while the first build runs; the restarted runtime then finds the
 * previous one still holding its port). A second failure, or any other, fails the test.
 */
async function startDemoWithOneRetry() {
  try {
    return await startDemo();
  } catch (err) {
    if (!/restarting build|Address already in use/.test(String(err?.message))) throw err;
    return startDemo();
  }
}

test('the demo command serves the chat page under wrangler dev and answers a weather turn with the scripted model', { timeout: 2 * STARTUP_MS + 60000 }, async (t) => {
  const demo = await startDemoWithOneRetry();
  t.after(async () => {
    await demo.stop();
    // wrangler dev left its quick build in build/; the other tests run the release build (kept in
    // target/worker-release, so this is a copy, not a rebuild).
    execFileSync('bash', ['scripts/build.sh', '--release'], { cwd: ROOT, stdio: 'ignore' });
  });

  assert.match(demo.page, /<!doctype html>/i);
  const version = /<meta name="app-version" content="([^"]*)"/.exec(demo.page)?.[1];
  assert.ok(version && !version.includes('{{'), `the page carries the build's version (${version})`);
  assert.match(demo.output(), /starting the scripted model server/, 'no OPENAI_BASE_URL: the scripted model is used');

  const room = `demo-${Date.now()}`;
  const tab = await connect(demo.url, 'ChatAgent', room);
  await tab.waitFor('cf_agent_mcp_servers', 10000);
  tab.send(chatRequest('r1', [userMessage('u1', "what's the weather in Paris")]));
  const done = await tab.waitFor(isDone('r1'), 30000);
  assert.equal(done.outcome, 'completed');
  await tab.close();
  // A browser page the demo serves connects with its own origin; another site's page is refused.
  assert.equal((await upgradeFrom(demo.url, room, demo.url)).status, 101, 'the page\'s own origin connects');
  const foreign = await upgradeFrom(demo.url, room, 'https://evil.example');
  assert.equal(foreign.status, 403, `another site's page is refused: ${foreign.body}`);

  const stored = await getMessages(demo.url, 'ChatAgent', room);
  assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant']);
  const weather = stored[1].parts.find((p) => p.type === 'tool-get_weather');
  assert.equal(weather?.state, 'output-available');
  assert.deepEqual(weather.output, { city: 'Paris', tempC: 21 });

  // The demo's MCP server: the agent is connected to it and a turn calls its `add`.
  const mcpRoom = `demo-mcp-${Date.now()}`;
  const mcpTab = await connect(demo.url, 'ChatAgent', mcpRoom);
  await mcpTab.waitFor((f) => f.type === 'cf_agent_mcp_servers' && f.mcp.servers.demo?.state === 'ready', 20000);
  mcpTab.send(chatRequest('r2', [userMessage('u2', '[tool:mcp_demo_add:{"a":2,"b":3}]')]));
  assert.equal((await mcpTab.waitFor(isDone('r2'), 30000)).outcome, 'completed');
  await mcpTab.close();
  const added = (await getMessages(demo.url, 'ChatAgent', mcpRoom))[1].parts.find((p) => p.type === 'tool-mcp_demo_add');
  assert.equal(added?.state, 'output-available');
  assert.deepEqual(added.output, { sum: 5 });
});

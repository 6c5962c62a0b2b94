// End-to-end: a person signs in to an MCP server for the agent in headless Chromium (Debian's
// chromium through playwright-core). The agent is connected to the repository's MCP server behind
// the test authorization server (tests/support/mcp-oauth.mjs); the browser opens the
// authorization URL the agent published, follows the authorization server's redirect to the
// agent's callback and lands on the demo page, and the server is then ready with its tools.
//
// Run: bash scripts/build.sh && node --test tests/browser/mcp-sign-in.test.mjs

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../support/chromium.mjs';
import { startWorker, connect, ADMIN } from '../support/harness.mjs';
import { waitUntil } from '../support/e2e.mjs';
import { startMcpServer } from '../support/mcp-server.mjs';

let worker;
let browser;
let mcp;

before(async () => {
  mcp = await startMcpServer({ oauth: { accessTtlSeconds: 3600 } });
  worker = await startWorker();
  browser = await launch({ deviceScaleFactor: 1 });
});

after(async () => {
  await browser?.close();
  await worker?.close();
  await mcp?.close();
});

test('opening the authorization URL in a browser signs the agent in to the server', async () => {
  const room = `sign-in-${Date.now()}`;
  const base = `/agents/chat-agent/${room}`;
  const tab = await connect(worker.url, 'ChatAgent', room);
  const frame = (pred) => tab.frames.findLast((f) => f.type === 'cf_agent_mcp_servers' && pred(f.mcp));
  const added = await fetch(`${worker.url}${base}/mcp-servers`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Locked', url: mcp.url }) });
  assert.equal(added.status, 201);
  const waiting = await waitUntil(() => frame((m) => m.servers.locked?.state === 'authenticating'), { what: 'the sign-in URL' });

  const page = await browser.context.newPage();
  const pageErrors = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));
  const landed = await page.goto(waiting.mcp.servers.locked.auth_url);
  assert.equal(new URL(page.url()).origin, worker.url);
  assert.equal(new URL(page.url()).pathname, '/');
  assert.equal(landed.status(), 200);

  const ready = await waitUntil(() => frame((m) => m.servers.locked?.state === 'ready'), { what: 'the signed-in server' });
  assert.deepEqual(ready.mcp.tools.map((tool) => tool.name).sort(), ['add', 'echo', 'fail', 'picture']);
  assert.deepEqual(mcp.events.filter((e) => e.type === 'grant').map((e) => e.grant), ['authorization_code']);
  await page.close();
  tab.close();
});

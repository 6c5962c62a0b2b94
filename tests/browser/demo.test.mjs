// End-to-end tests of the demo page (demo/src → demo/dist/index.html, embedded in the worker) in
// headless Chromium: Debian's /usr/bin/chromium driven by npm playwright-core (never a downloaded
// browser). The worker runs under Miniflare with the scripted model server (tests/support).
//
// Run: bash scripts/build.sh && node --test tests/browser/demo.test.mjs
// Saves test-artifacts/demo.png (the finished chat) and copies it to docs/screenshot.png.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { launch } from '../support/chromium.mjs';
import { ROOT, getMessages, startWorker } from '../support/harness.mjs';

// A zone unlike the machine's (UTC), so the answer can only come from the browser.
const TIME_ZONE = 'Pacific/Auckland';
const ARTIFACTS = join(ROOT, 'test-artifacts');

let worker;
let browser;
let context;
/** Console errors and uncaught exceptions of every page, checked at the end. */
const pageErrors = [];

before(async () => {
  worker = await startWorker();
  browser = await launch({ timezoneId: TIME_ZONE, deviceScaleFactor: 1 });
  ({ context } = browser);
});

after(async () => {
  await browser?.close();
  await worker?.close();
});

// ---- helpers ---------------------------------------------------------------------------------

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `fn` until it returns a truthy value; throws `message()` after `timeoutMs`. */
async function waitUntil(fn, { timeoutMs = 15_000, interval = 50, message = () => 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${await message()}`);
    await sleep(interval);
  }
}

/** Open the demo page on agent `name` and wait until its socket is open. */
async function openChat(name, { token } = {}) {
  const page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(`${name}: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') pageErrors.push(`${name}: console: ${msg.text()}`);
  });
  const params = new URLSearchParams({ name });
  if (token) params.set('token', token);
  await page.goto(`${worker.url}/?${params}`);
  await waitConnected(page);
  return page;
}

const waitConnected = (page) => page.locator('[data-testid=connection][data-state=open]').waitFor();

/** Type into the message box and press Enter. */
async function send(page, text) {
  const input = page.getByLabel('Message');
  await input.fill(text);
  await input.press('Enter');
}

/** Text of every assistant text part, in order, joined by newlines. */
const assistantText = (page) =>
  page.locator('[data-role=assistant] [data-testid=text]').allInnerTexts().then((t) => t.join('\n'));

async function waitForAssistantText(page, needle, timeoutMs = 15_000) {
  return waitUntil(async () => ((await assistantText(page)).includes(needle) ? assistantText(page) : null), {
    timeoutMs,
    message: async () => `assistant text containing ${JSON.stringify(needle)}; have ${JSON.stringify(await assistantText(page))}`,
  });
}

/** Wait until the page is idle: connected, status "ready". */
const waitIdle = (page) => page.locator('[data-testid=status][data-state=ready]').waitFor();

const toolCall = (page, name) => page.locator(`[data-testid=tool-call][data-tool-name="${name}"]`);

async function waitToolState(page, name, state) {
  await page.locator(`[data-testid=tool-call][data-tool-name="${name}"][data-state="${state}"]`).waitFor();
}

const words = (n) => Array.from({ length: n }, (_, i) => `w${i + 1}`).join(' ');
const wordCount = (text) => (text.match(/\bw\d+\b/g) ?? []).length;

// ---- tests -----------------------------------------------------------------------------------

test('the page is the bundled React app, stamped with the crate version', async () => {
  const res = await worker.fetch('/');
  assert.equal(res.status, 200);
  const html = await res.text();
  assert.match(res.headers.get('content-type') ?? '', /text\/html/);
  assert.doesNotMatch(html, /\{\{VERSION\}\}/, 'build.rs replaces {{VERSION}}');
  assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+stylesheet/i, 'no external scripts or styles');

  const page = await openChat('page-shell');
  assert.match(await page.getByTestId('version').innerText(), /^v\d+\.\d+\.\d+/);
  assert.equal(await page.getByTestId('agent-name').innerText(), 'page-shell');
  await page.getByTestId('empty').waitFor();
  await page.close();
});

test('a plain turn streams the reply; Enter sends and Shift+Enter adds a newline', async () => {
  const page = await openChat('plain');
  const input = page.getByLabel('Message');
  await input.fill('first line');
  await input.press('Shift+Enter');
  await input.pressSequentially('second line');
  assert.equal(await input.inputValue(), 'first line\nsecond line', 'Shift+Enter does not send');
  assert.equal(await page.getByTestId('message').count(), 0);

  await input.press('Enter');
  assert.equal(await input.inputValue(), '', 'Enter sends and empties the box');
  await waitForAssistantText(page, 'You said: first line\nsecond line');
  await waitIdle(page);
  const user = page.locator('[data-role=user] [data-testid=text]');
  assert.deepEqual(await user.allInnerTexts(), ['first line\nsecond line']);

  const stored = await getMessages(worker.url, 'ChatAgent', 'plain');
  assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant']);
  await page.close();
});

test('the page sends only its newest message; the agent keeps the history', async () => {
  const sent = [];
  const page = await context.newPage();
  page.on('websocket', (ws) => ws.on('framesent', ({ payload }) => {
    try {
      const frame = JSON.parse(String(payload));
      if (frame.type === 'cf_agent_use_chat_request') sent.push(JSON.parse(frame.init.body));
    } catch { /* not a JSON frame */ }
  }));
  await page.goto(`${worker.url}/?name=tail`);
  await waitConnected(page);
  for (const text of ['one', 'two', 'three']) {
    await send(page, text);
    await waitForAssistantText(page, `You said: ${text}`);
    await waitIdle(page);
  }
  assert.equal(sent.length, 3);
  assert.deepEqual(sent.map((body) => body.messages.length), [1, 1, 1], 'each request carries one message');
  assert.deepEqual(sent.map((body) => body.messages[0].parts[0].text), ['one', 'two', 'three']);
  const stored = await getMessages(worker.url, 'ChatAgent', 'tail');
  assert.equal(stored.length, 6);
  assert.equal(await page.getByTestId('message').count(), 6);
  await page.close();
});

test('message text is rendered as text, never as HTML', async () => {
  const page = await openChat('html-escape');
  const payload = '<img src=x onerror="window.__pwned=1"><b>bold</b>';
  await send(page, payload);
  await waitForAssistantText(page, `You said: ${payload}`);
  await waitIdle(page);
  assert.equal(await page.locator('[data-testid=messages] img, [data-testid=messages] b').count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  await page.close();
});

test('?token= is passed through to the agent socket and the transcript fetch', async () => {
  const wsUrls = [];
  const httpUrls = [];
  const page = await context.newPage();
  page.on('websocket', (ws) => wsUrls.push(ws.url()));
  page.on('request', (req) => httpUrls.push(req.url()));
  await page.goto(`${worker.url}/?name=with-token&token=s3cret`);
  await waitConnected(page);
  const ws = wsUrls.map((u) => new URL(u)).find((u) => u.pathname === '/agents/chat-agent/with-token');
  assert.ok(ws, `socket to /agents/chat-agent/with-token, saw ${wsUrls}`);
  assert.equal(ws.searchParams.get('token'), 's3cret');
  const fetched = httpUrls.map((u) => new URL(u)).find((u) => u.pathname.endsWith('/with-token/get-messages'));
  assert.ok(fetched, `get-messages request, saw ${httpUrls}`);
  assert.equal(fetched.searchParams.get('token'), 's3cret');
  await page.close();
});

test('a server tool call is shown with its name, state, input and output', async () => {
  const page = await openChat('server-tool');
  await send(page, "What's the weather in Paris?");
  await waitToolState(page, 'get_weather', 'output-available');
  const tool = toolCall(page, 'get_weather');
  assert.equal(await tool.getByTestId('tool-name').innerText(), 'get_weather');
  assert.deepEqual(JSON.parse(await tool.getByTestId('tool-input').innerText()), { city: 'Paris' });
  assert.deepEqual(JSON.parse(await tool.getByTestId('tool-output').innerText()), { city: 'Paris', tempC: 21 });
  await waitForAssistantText(page, 'Tool results: get_weather=');
  await waitIdle(page);
  await page.close();
});

test('client tools run in the browser and the agent continues with their result', async () => {
  worker.model.requests.length = 0;
  const page = await openChat('client-tools');

  await send(page, "What's my timezone?");
  await waitToolState(page, 'getUserTimezone', 'output-available');
  const tz = toolCall(page, 'getUserTimezone');
  assert.deepEqual(JSON.parse(await tz.getByTestId('tool-output').innerText()), { timeZone: TIME_ZONE });
  // The continuation that follows the browser's result: the model saw it and answered with it.
  const text = await waitForAssistantText(page, `getUserTimezone={"timeZone":"${TIME_ZONE}"}`);
  assert.match(text, new RegExp(TIME_ZONE.replace('/', '\\/')));
  await waitIdle(page);

  // The schemas reached the model (the hook sends them only for tools with `execute`).
  const offered = worker.model.requests[0].tools.map((t) => t.function);
  for (const name of ['getUserTimezone', 'getScreenSize']) {
    const schema = offered.find((f) => f.name === name);
    assert.ok(schema, `${name} offered to the model`);
    assert.equal(schema.parameters?.type, 'object');
  }
  const toolMessages = worker.model.requests.flatMap((r) => r.messages).filter((m) => m.role === 'tool');
  assert.ok(toolMessages.some((m) => String(m.content).includes(TIME_ZONE)), 'tool result sent to the model');

  await send(page, "What's my screen size?");
  await waitToolState(page, 'getScreenSize', 'output-available');
  const screen = await page.evaluate(() => ({ width: window.screen.width, height: window.screen.height }));
  const size = toolCall(page, 'getScreenSize');
  assert.deepEqual(JSON.parse(await size.getByTestId('tool-output').innerText()), screen);
  // (The agent stores JSON objects with sorted keys, so compare fields, not the string.)
  const reply = await waitForAssistantText(page, 'Tool results: getScreenSize=');
  const echoed = JSON.parse(reply.slice(reply.indexOf('getScreenSize=') + 'getScreenSize='.length).split('\n')[0]);
  assert.deepEqual(echoed, screen);
  await waitIdle(page);

  // Each browser tool ran once: one result, one continuation per call.
  const stored = await getMessages(worker.url, 'ChatAgent', 'client-tools');
  const parts = stored.flatMap((m) => m.parts).filter((p) => p.type?.startsWith('tool-'));
  assert.deepEqual(parts.map((p) => [p.type, p.state]), [
    ['tool-getUserTimezone', 'output-available'],
    ['tool-getScreenSize', 'output-available'],
  ]);
  assert.equal(worker.model.requests.length, 4, 'two tool-call turns + two continuations');
  await page.close();
});

test('approval: Approve runs the tool and the agent continues', async () => {
  const page = await openChat('approve');
  await send(page, 'Delete notes.txt');
  await waitToolState(page, 'delete_file', 'approval-requested');
  const tool = toolCall(page, 'delete_file');
  assert.deepEqual(JSON.parse(await tool.getByTestId('tool-input').innerText()), { path: 'notes.txt' });
  await tool.getByRole('button', { name: 'Deny', exact: true }).waitFor();
  await tool.getByRole('button', { name: 'Approve', exact: true }).click();

  await waitToolState(page, 'delete_file', 'output-available');
  assert.deepEqual(JSON.parse(await tool.getByTestId('tool-output').innerText()), { deleted: 'notes.txt' });
  assert.equal(await tool.getByRole('button', { name: 'Approve' }).count(), 0, 'prompt gone');
  await waitForAssistantText(page, 'Tool results: delete_file={"deleted":"notes.txt"}');
  await waitIdle(page);
  await page.close();
});

test('approval: Deny does not run the tool and the agent continues', async () => {
  const page = await openChat('deny');
  await send(page, 'Delete secrets.txt');
  await waitToolState(page, 'delete_file', 'approval-requested');
  await toolCall(page, 'delete_file').getByRole('button', { name: 'Deny', exact: true }).click();

  await waitToolState(page, 'delete_file', 'output-denied');
  assert.equal(await toolCall(page, 'delete_file').getByRole('button', { name: 'Approve' }).count(), 0);
  await waitForAssistantText(page, 'Tool results: delete_file=');
  await waitIdle(page);
  const text = await assistantText(page);
  assert.doesNotMatch(text, /"deleted"/);

  const stored = await getMessages(worker.url, 'ChatAgent', 'deny');
  const part = stored.flatMap((m) => m.parts).find((p) => p.type === 'tool-delete_file');
  assert.equal(part.state, 'output-denied');
  assert.equal(part.output, undefined);
  await page.close();
});

test('a second page on the same agent sees the first page\'s stream live', async () => {
  const a = await openChat('two-tabs');
  const b = await openChat('two-tabs');
  await send(a, '[tokens:30] [delay:80]');

  // B shows the user's message and the reply while it is still streaming.
  await b.locator('[data-role=user] [data-testid=text]', { hasText: '[tokens:30]' }).waitFor();
  const partial = await waitUntil(async () => {
    const t = await assistantText(b);
    return wordCount(t) >= 3 && t;
  }, { message: () => 'B to show the first words' });
  assert.ok(wordCount(partial) < 30, `B saw a partial reply (${wordCount(partial)} words), not just the end`);
  assert.notEqual(await a.getByTestId('status').getAttribute('data-state'), 'ready', 'A still streaming');

  await waitForAssistantText(a, 'w30');
  await waitForAssistantText(b, 'w30');
  await waitIdle(a);
  await waitIdle(b);
  assert.equal((await assistantText(a)).trim(), words(30));
  assert.equal((await assistantText(b)).trim(), words(30));

  // …and B can answer an approval that A's turn asked for, A sees the result.
  await send(a, 'Delete draft.txt');
  await waitToolState(b, 'delete_file', 'approval-requested');
  await toolCall(b, 'delete_file').getByRole('button', { name: 'Approve', exact: true }).click();
  await waitToolState(a, 'delete_file', 'output-available');
  await waitForAssistantText(a, 'Tool results: delete_file={"deleted":"draft.txt"}');
  await waitForAssistantText(b, 'Tool results: delete_file={"deleted":"draft.txt"}');
  await a.close();
  await b.close();
});

test('reloading mid-stream resumes the reply where it is', async () => {
  const page = await openChat('reload');
  await send(page, '[tokens:40] [delay:100]');
  await waitUntil(async () => wordCount(await assistantText(page)) >= 5, { message: () => 'first words' });
  await page.reload();
  await waitConnected(page);

  // After the reload the reply keeps growing live (not only a final snapshot)…
  const seen = new Set();
  await waitUntil(async () => {
    const n = wordCount(await assistantText(page));
    seen.add(n);
    return n >= 40;
  }, { interval: 20, message: async () => `the full reply; have ${JSON.stringify(await assistantText(page))}` });
  const partials = [...seen].filter((n) => n > 0 && n < 40);
  assert.ok(partials.length >= 2, `saw the reply grow after reload (word counts ${[...seen]})`);
  // …and ends exactly once, complete, without duplicated text.
  await waitIdle(page);
  assert.equal((await assistantText(page)).trim(), words(40));
  assert.equal(await page.locator('[data-role=assistant]').count(), 1);
  const stored = await getMessages(worker.url, 'ChatAgent', 'reload');
  assert.equal(stored.at(-1).parts.filter((p) => p.type === 'text').map((p) => p.text).join('').trim(), words(40));
  await page.close();
});

test('Stop is shown while streaming and stops the reply', async () => {
  const page = await openChat('stop');
  await send(page, '[tokens:60] [delay:100]');
  const stop = page.getByRole('button', { name: 'Stop', exact: true });
  await waitUntil(async () => wordCount(await assistantText(page)) >= 3, { message: () => 'first words' });
  await stop.click();
  await waitIdle(page);
  await page.getByRole('button', { name: 'Send', exact: true }).waitFor();
  const n = wordCount(await assistantText(page));
  await sleep(800);
  assert.equal(wordCount(await assistantText(page)), n, 'no more words after Stop');
  assert.ok(n < 60, `stopped early (${n} words)`);
  await page.close();
});

test('errors are shown readably', async () => {
  const page = await openChat('errors');
  await send(page, 'boom [http:400]');
  const banner = page.getByRole('alert');
  await banner.waitFor();
  assert.match(await banner.getByTestId('error-message').innerText(), /400.*scripted error 400/);
  await waitIdle(page);
  await page.getByRole('button', { name: 'Dismiss error' }).click();
  assert.equal(await page.getByRole('alert').count(), 0);

  // The next turn works and starts without the old error.
  await send(page, 'hello again');
  await waitForAssistantText(page, 'You said: hello again');
  assert.equal(await page.getByRole('alert').count(), 0);
  await page.close();
});

test('"Recovering…" is shown while the agent reports a recovery', async () => {
  // A real recovery (eviction mid-turn) finishes before a browser could reconnect here, since the
  // scripted model answers the continuation at once; so the frames are injected into the live socket.
  const page = await context.newPage();
  let toPage;
  await page.routeWebSocket(/\/agents\/chat-agent\/recovering/, (ws) => {
    ws.connectToServer();
    toPage = (frame) => ws.send(JSON.stringify(frame));
  });
  await page.goto(`${worker.url}/?name=recovering`);
  await waitConnected(page);
  await waitIdle(page);
  toPage({ type: 'cf_agent_chat_recovering', recovering: true, id: 'req-1' });
  await page.getByTestId('recovering').waitFor();
  assert.match(await page.getByTestId('status').innerText(), /^Recovering…/);
  toPage({ type: 'cf_agent_chat_recovering', recovering: false, id: 'req-1' });
  await waitIdle(page);
  await page.close();
});

test('Clear empties the chat here, on the agent and in other tabs', async () => {
  const a = await openChat('clear');
  await send(a, 'something to forget');
  await waitForAssistantText(a, 'You said: something to forget');
  await waitIdle(a);
  const b = await openChat('clear');
  await waitForAssistantText(b, 'You said: something to forget');

  await a.getByRole('button', { name: 'Clear', exact: true }).click();
  await a.getByTestId('empty').waitFor();
  await b.getByTestId('empty').waitFor();
  assert.deepEqual(await getMessages(worker.url, 'ChatAgent', 'clear'), []);
  await a.close();
  await b.close();
});

test('screenshot of a finished chat (test-artifacts/demo.png, docs/screenshot.png)', async () => {
  const page = await openChat('screenshot');
  await page.setViewportSize({ width: 1100, height: 1000 }); // room for the whole conversation
  await send(page, "What's the weather in Paris?");
  await waitForAssistantText(page, 'Tool results: get_weather=');
  await waitIdle(page);
  await send(page, "What's my timezone?");
  await waitForAssistantText(page, 'Tool results: getUserTimezone=');
  await waitIdle(page);
  await send(page, 'Delete notes.txt');
  await waitToolState(page, 'delete_file', 'approval-requested');
  await waitIdle(page);

  await mkdir(ARTIFACTS, { recursive: true });
  const shot = join(ARTIFACTS, 'demo.png');
  await page.screenshot({ path: shot });
  await mkdir(join(ROOT, 'docs'), { recursive: true });
  await copyFile(shot, join(ROOT, 'docs', 'screenshot.png'));
  await page.close();
});

test('no page errors', () => {
  assert.deepEqual(pageErrors, []);
});

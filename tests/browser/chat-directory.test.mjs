// End-to-end: the demo page with a chat directory (`/?user=…`) in headless Chromium (Debian's
// chromium through playwright-core). The sidebar lists the user's chats from their `ChatDirectory`
// agent; "New chat" creates one, clicking a chat switches the conversation (useAgentChat connects
// to that chat's own `ChatAgent`), each chat keeps its own history, a chat is renamed in place and
// a deleted chat leaves the list and is erased.
//
// Run: bash scripts/build.sh && node --test tests/browser/chat-directory.test.mjs

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../support/chromium.mjs';
import { getMessages, startWorker } from '../support/harness.mjs';

let worker;
let browser;
const pageErrors = [];

before(async () => {
  worker = await startWorker();
  browser = await launch({ deviceScaleFactor: 1 });
});

after(async () => {
  await browser?.close();
  await worker?.close();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(fn, what, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const items = (page) => page.getByTestId('chat-item');
const titles = (page) => page.getByTestId('chat-title').locator('span').allInnerTexts();
const userTexts = (page) => page.locator('[data-role=user] [data-testid=text]').allInnerTexts();
const connected = (page) => page.locator('[data-testid=connection][data-state=open]').waitFor();
const shownAgent = (page) => page.getByTestId('agent-name').innerText();

async function send(page, text) {
  const input = page.getByLabel('Message');
  await input.fill(text);
  await input.press('Enter');
  await page.locator('[data-role=assistant] [data-testid=text]', { hasText: `You said: ${text}` }).waitFor();
  await page.locator('[data-testid=status][data-state=ready]').waitFor();
}

/** Clicks the chat whose id is `id` and waits until its conversation is connected. */
async function open(page, id, user) {
  await page.locator(`[data-testid=chat-item][data-chat-id="${id}"] [data-testid=chat-title]`).click();
  await waitUntil(async () => (await shownAgent(page)) === `${user}~${id}`, `chat ${id} shown`);
  await connected(page);
}

test('the sidebar creates two chats, switches between their own histories, renames and deletes', { timeout: 90_000 }, async () => {
  const user = `reader-${Date.now()}`;
  const page = await browser.context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
  await page.goto(`${worker.url}/?${new URLSearchParams({ user })}`);
  assert.equal(await page.getByTestId('user').innerText(), user);
  await page.getByTestId('no-chat').waitFor();

  await page.getByTestId('new-chat').click();
  await waitUntil(async () => (await items(page).count()) === 1, 'the first chat listed');
  await connected(page);
  const first = await items(page).first().getAttribute('data-chat-id');
  await send(page, 'alpha plans');

  await page.getByTestId('new-chat').click();
  await waitUntil(async () => (await items(page).count()) === 2, 'the second chat listed');
  const second = await page.locator('[data-testid=chat-item][aria-current=page]').getAttribute('data-chat-id');
  assert.notEqual(second, first, 'the new chat is the one shown');
  await waitUntil(async () => (await shownAgent(page)) === `${user}~${second}`, 'the new chat shown');
  await connected(page);
  await page.getByTestId('empty').waitFor();
  await send(page, 'beta notes');
  assert.deepEqual(await userTexts(page), ['beta notes']);

  await open(page, first, user);
  await waitUntil(async () => (await userTexts(page)).join() === 'alpha plans', "the first chat's history");
  await open(page, second, user);
  await waitUntil(async () => (await userTexts(page)).join() === 'beta notes', "the second chat's history");

  // A turn's first message names an unnamed chat.
  await waitUntil(async () => (await titles(page)).sort().join() === 'alpha plans,beta notes', 'titles from first messages');

  await page.locator(`[data-testid=chat-item][data-chat-id="${first}"] [data-testid=rename-chat]`).click();
  const input = page.getByTestId('rename-input');
  await input.fill('Project Alpha');
  await input.press('Enter');
  await waitUntil(async () => (await titles(page)).includes('Project Alpha'), 'the renamed chat');

  await page.locator(`[data-testid=chat-item][data-chat-id="${second}"] [data-testid=delete-chat]`).click();
  await waitUntil(async () => (await items(page).count()) === 1, 'the deleted chat gone from the list');
  assert.deepEqual(await titles(page), ['Project Alpha']);
  await waitUntil(async () => (await shownAgent(page)) === `${user}~${first}`, 'the remaining chat shown');
  await connected(page);
  await waitUntil(async () => (await userTexts(page)).join() === 'alpha plans', 'the remaining history');
  const erased = await waitUntil(() => getMessages(worker.url, 'ChatAgent', `${user}~${second}`).catch(() => null), 'the erased chat');
  assert.deepEqual(erased, [], 'the deleted chat is erased');

  // A reload shows the same list and the chat in the address.
  await page.reload();
  await waitUntil(async () => (await titles(page)).join() === 'Project Alpha', 'the list after a reload');
  await connected(page);
  assert.equal(await shownAgent(page), `${user}~${first}`);
  await page.close();
  assert.deepEqual(pageErrors, []);
});

// The demo page in headless Chromium (Debian's /usr/bin/chromium driven by npm playwright-core)
// while a cut answer is recovered: the runtime is killed mid-answer (Miniflare disposed and
// started again on the same storage), the page is reloaded, and the DOM is sampled all through
// the recovery. A person must never see two assistant bubbles for one answer, and the answer
// must end complete, once.
//
// Run: bash scripts/build.sh && node --test tests/browser/recovery.test.mjs

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../support/chromium.mjs';
import { getMessages, startWorker } from '../support/harness.mjs';

let worker;
let browser;
let context;
const pageErrors = [];

before(async () => {
  worker = await startWorker();
  browser = await launch();
  ({ context } = browser);
});

after(async () => {
  await browser?.close();
  await worker?.close();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** What a person sees: the text of each assistant bubble, and whether a recovery is shown. */
const view = (page) => page.evaluate(() => ({
  bubbles: [...document.querySelectorAll('[data-role=assistant]')].map((b) =>
    [...b.querySelectorAll('[data-testid=text]')].map((t) => t.innerText).join('')),
  users: document.querySelectorAll('[data-role=user]').length,
}));

test('a page reloaded while a cut answer is recovered never shows two assistant bubbles for it, and ends with the answer once', async () => {
  const name = `recovery-${Date.now().toString(36)}`;
  const page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
  await page.goto(`${worker.url}/?${new URLSearchParams({ name })}`);
  await page.locator('[data-testid=connection][data-state=open]').waitFor();
  const input = page.getByLabel('Message');
  await input.fill('a long answer please [tokens:150] [delay:40]');
  await input.press('Enter');
  const full = Array.from({ length: 150 }, (_, i) => `w${i + 1}`).join(' ');

  const samples = [];
  const sample = async (phase) => {
    try {
      const v = await view(page);
      samples.push({ phase, ...v });
      return v;
    } catch {
      return null; // the page is navigating
    }
  };
  // Mid-answer: kill the runtime.
  for (;;) {
    const v = await sample('streaming');
    if (v?.bubbles.at(-1)?.includes('w30 ')) break;
    await sleep(30);
  }
  await worker.restart();
  // The person reloads; the agent wakes and recovers while the page is up.
  await page.reload();
  let seenRecovery = false;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await sample('recovering');
    if (v && v.bubbles.length === 1 && v.bubbles[0] !== full && v.bubbles[0].length > 0) seenRecovery = true;
    if (v && v.bubbles.length === 1 && v.bubbles[0] === full) break;
    if (Date.now() > deadline) assert.fail(`the answer never completed; last view ${JSON.stringify(samples.at(-1))}`);
    await sleep(25);
  }
  // Settled: keep looking a little longer.
  for (let i = 0; i < 20; i++) {
    await sample('settled');
    await sleep(25);
  }

  const doubled = samples.filter((s) => s.bubbles.length > s.users);
  assert.deepEqual(doubled.slice(0, 3), [], `more assistant bubbles than questions in ${doubled.length} of ${samples.length} samples`);
  for (const s of samples) {
    for (const text of s.bubbles) assert.ok(full.startsWith(text), `a bubble showed text that is not the answer's (${s.phase}): ${JSON.stringify(text.slice(-80))}`);
  }
  assert.ok(seenRecovery, 'the page showed the answer being recovered (partial, then growing)');
  const last = samples.at(-1);
  assert.deepEqual(last.bubbles, [full], 'one bubble with the whole answer');
  const stored = await getMessages(worker.url, 'ChatAgent', name);
  assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant']);
  assert.deepEqual(pageErrors, []);
});

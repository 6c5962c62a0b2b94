// End-to-end: the demo page's synced state in headless Chromium (Debian's chromium through
// playwright-core). Two tabs on one agent: a field set in the first tab through the
// `setStateField` callable shows in the second, live, and a tab opened later shows it too; a
// reminder set in the first tab (the `remind` callable, a schedule on the agent) shows as pending
// in the second and then as fired when its schedule runs.
//
// Run: bash scripts/build.sh && node --test tests/browser/agent-state.test.mjs

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../support/chromium.mjs';
import { startWorker } from '../support/harness.mjs';

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

async function openTab(name) {
  const page = await browser.context.newPage();
  page.on('pageerror', (err) => pageErrors.push(`${name}: ${err.message}`));
  await page.goto(`${worker.url}/?${new URLSearchParams({ name })}`);
  await page.locator('[data-testid=connection][data-state=open]').waitFor();
  return page;
}

test('a field set by a callable in one tab shows live in another', async () => {
  const name = `state-${Date.now()}`;
  const first = await openTab(name);
  const second = await openTab(name);
  const field = (page) => page.getByTestId('state-field-mood');
  const shown = async (page) => (await field(page).innerText()).replace(/\s+/g, ' ');
  assert.equal(await field(second).count(), 0, 'the state starts empty');

  await first.getByTestId('state-key').fill('mood');
  await first.getByTestId('state-value').fill('sunny');
  await first.getByTestId('state-set').click();

  await field(second).waitFor({ timeout: 10_000 });
  assert.equal(await shown(second), 'mood sunny');
  await field(first).waitFor({ timeout: 10_000 });

  const later = await openTab(name);
  await field(later).waitFor({ timeout: 10_000 });
  assert.equal(await shown(later), 'mood sunny');
  assert.deepEqual(pageErrors, []);
});

test('a reminder set in one tab shows as pending, then fires on its schedule in another tab', async () => {
  const name = `remind-${Date.now()}`;
  const first = await openTab(name);
  const second = await openTab(name);
  const field = (page) => page.getByTestId('state-field-reminder');
  const shown = async (page) => (await field(page).innerText()).replace(/\s+/g, ' ');

  await first.getByTestId('state-value').fill('water the plants');
  await first.getByTestId('state-remind').click();
  await field(second).waitFor({ timeout: 10_000 });
  assert.equal(await shown(second), 'reminder ⏳ water the plants');
  const fired = (page) => page.waitForFunction(
    () => document.querySelector('[data-testid=state-field-reminder]')?.innerText.includes('⏰'),
    null,
    { timeout: 20_000 },
  );
  await fired(second);
  assert.equal(await shown(second), 'reminder ⏰ water the plants');
  await fired(first);
  assert.equal(await shown(first), 'reminder ⏰ water the plants');
  assert.deepEqual(pageErrors, []);
});

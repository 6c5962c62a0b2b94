import { chromium } from 'playwright-core';
import { startWorker } from '/work/main/tests/support/harness.mjs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const w = await startWorker();
const profile = await mkdtemp(join(tmpdir(), 'chromium-profile-'));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless','--no-sandbox','--disable-gpu','--disable-quic','--no-first-run','--disable-background-networking','--disable-component-update','--disable-sync'],
  timezoneId: 'Pacific/Auckland',
  viewport: { width: 1000, height: 800 },
});
const page = await ctx.newPage();
page.on('console', (m) => console.log('[console]', m.type(), m.text()));
page.on('pageerror', (e) => console.log('[pageerror]', e.message));
await page.goto(`${w.url}/?name=explore`);
await page.getByTestId('connection').filter({ hasText: 'Connected' }).waitFor();
const send = async (t) => { await page.getByTestId('input').fill(t); await page.getByTestId('input').press('Enter'); };
await send('hello there');
await page.waitForTimeout(1500);
await send("what's the weather in Paris");
await page.waitForTimeout(1500);
await send("what's my timezone");
await page.waitForTimeout(2500);
await send("delete notes.txt");
await page.waitForTimeout(1500);
await page.getByRole('button', { name: 'Approve' }).click();
await page.waitForTimeout(2000);
console.log(await page.getByTestId('messages').innerText());
await page.screenshot({ path: '/tmp/demo-explore/a.png' });
console.log(JSON.stringify(w.model.requests.map(r => ({tools: r.tools?.map(t=>t.function?.name), last: r.messages.at(-1)})), null, 0));
await ctx.close();
await w.close();

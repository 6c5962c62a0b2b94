// Headless Chromium for the browser tests: Debian's /usr/bin/chromium (or CHROMIUM_PATH) driven
// by npm playwright-core, never a downloaded browser, with a throw-away profile. Owns: launch.

import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/**
 * A persistent browser context on a fresh profile (`options` are playwright's, over a 1100×860
 * viewport), with a 15 s default timeout. Returns { context, close() }; close also removes the profile.
 */
export async function launch(options = {}) {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} missing: run bash scripts/setup.sh --browser`);
  const profileDir = await mkdtemp(join(tmpdir(), 'durable-chat-chromium-'));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1100, height: 860 },
    ...options,
  });
  context.setDefaultTimeout(15_000);
  return {
    context,
    async close() {
      await context.close();
      await rm(profileDir, { recursive: true, force: true });
    },
  };
}

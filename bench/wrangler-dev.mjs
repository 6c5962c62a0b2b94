// `wrangler dev` for the developer's-loop benchmarks (bench/devloop.mjs, bench/devloop-cpu.mjs):
// the repository's wrangler on a free port of 127.0.0.1, in its own process group, with
// throw-away state and no metrics. Owns: freePort, sleep, startWrangler.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const WRANGLER = join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

/**
 * Starts `wrangler dev` for worker `w` ({ cwd, config }) with `extraArgs`; its output is collected.
 * Returns { pid, port, url, output(), alive(), reloads() (finished reloads), stop() }.
 */
export async function startWrangler(w, extraArgs = []) {
  const port = await freePort();
  const state = mkdtempSync(join(tmpdir(), 'devloop-'));
  const env = { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_LOG_PATH: join(state, 'logs') };
  const args = [WRANGLER, 'dev', '--config', w.config, '--ip', '127.0.0.1', '--port', String(port), '--persist-to', join(state, 'do'), ...extraArgs];
  const child = spawn(process.execPath, args, { cwd: w.cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    pid: child.pid,
    port,
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    alive: () => child.exitCode === null,
    reloads: () => output.split('Local server updated and ready').length - 1,
    async stop() {
      try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
      await Promise.race([exited, sleep(10000)]);
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
      rmSync(state, { recursive: true, force: true });
    },
  };
}

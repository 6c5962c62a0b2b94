// Smoke test of the benchmark (bench/run.mjs): its smallest setting runs to the end and prints
// every row of the results table, with the runtime's floor measured beside ours and Think. It
// checks no figures: the benchmark is not a timing test.
// Needs build/ (scripts/build.sh); bench/run.mjs installs and bundles bench/think-worker itself.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const ROWS = [
  'runtime CPU per streamed token',
  'request → first text chunk',
  'before the model is called',
  "model's last byte → terminal done frame",
  'fan-out',
  'tokens at once: wall time',
  'messages posted in one request',
  'SQLite write transactions per',
  'SQLite WAL bytes written per',
  'runtime memory per agent',
  'fresh-agent connect on a warm process',
  'worker code size',
  'cached share of input tokens',
];

test('bench/run.mjs --quick completes and prints the table', { timeout: 300_000 }, async () => {
  const args = ['bench/run.mjs', '--quick', '--reps', '1', '--tokens', '50', '--tabs', '3', '--agents', '2', '--history', '4', '--history-long', '200', '--connects', '2', '--load-agents', '3', '--load-tokens', '20', '--cache-turns', '6'];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 0, `bench exited with ${code}\nstdout:\n${out}\nstderr:\n${err}`);
  assert.match(out, /\| metric\s+\| ours median \/ p90\s+\| think median \/ p90\s+\| floor median \/ p90\s+\| ours\/think \| ours\/floor \|/);
  for (const row of ROWS) {
    const line = out.split('\n').find((l) => l.startsWith('| ') && l.includes(row));
    assert.ok(line, `table row "${row}" missing:\n${out}`);
    assert.equal(line.split('|').length, 8, `malformed row: ${line}`);
  }
  // every row has a floor figure except the code-size and cache rows (the floor has neither)
  const noFloor = ['worker code size', 'cached share of input tokens'];
  for (const row of ROWS.filter((r) => !noFloor.includes(r))) {
    const cells = out.split('\n').find((l) => l.startsWith('| ') && l.includes(row)).split('|').map((c) => c.trim());
    assert.notEqual(cells[4], '-', `no floor figure for "${row}"`);
  }
  assert.match(out, /targets \(medians of this run\):\n(.*ours\/floor.*\n)+/);
  assert.match(out, /cache target \(this run\):\n  our cached share over turns \d+–\d+: [\d.]+%/);
  assert.match(out, /load during each phase/);
});

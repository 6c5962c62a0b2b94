// End-to-end: a short chaos run (tests/chaos/chaos.mjs for ~20 s) — many turns of every kind
// while the runtime is killed at random moments — must end with no lost user message, no
// duplicated assistant message and no stuck turn.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../chaos/chaos.mjs', import.meta.url));
const SECONDS = 20;

function run(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

test('killing the runtime at random moments over many turns loses no message, duplicates no answer and leaves no turn stuck', { timeout: (SECONDS + 150) * 1000 }, async () => {
  const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 1e9);
  const { code, out, err } = await run(['--seconds', String(SECONDS), '--seed', String(seed), '--json']);
  const line = out.trim().split('\n').at(-1) ?? '';
  let report;
  try {
    report = JSON.parse(line);
  } catch {
    assert.fail(`chaos (seed ${seed}) exited ${code} without a report:\n${out}\n${err.slice(-2000)}`);
  }
  const summary = JSON.stringify({ ...report, transcript: undefined }, null, 1);
  assert.ok(report.kills >= 3, `the runtime was killed several times: ${summary}`);
  assert.ok(report.turnsSent >= 5, `many turns were sent: ${summary}`);
  assert.equal(report.lost, 0, `lost user messages (seed ${seed}): ${summary}`);
  assert.equal(report.duplicated, 0, `duplicated messages (seed ${seed}): ${summary}`);
  assert.equal(report.stuck, 0, `stuck turns (seed ${seed}): ${summary}\n${(report.transcript ?? []).join('\n')}`);
  assert.equal(report.misplaced, 0, `misplaced answers (seed ${seed}): ${summary}`);
  assert.ok(report.settled, `the system settled: ${summary}`);
  assert.equal(code, 0, `chaos exit code (seed ${seed})`);
});

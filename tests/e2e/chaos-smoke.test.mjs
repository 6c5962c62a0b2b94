// End-to-end: short chaos runs (tests/chaos/chaos.mjs, a few seeds of 12 steps) — many turns of
// every kind while the runtime is killed at chosen moments — must end with no lost user message,
// no duplicated assistant message and no stuck turn. The seeds are fixed, so a failure names a
// schedule that can be run again (`node tests/chaos/chaos.mjs --seed N --steps 12 --verbose`);
// CHAOS_SEED (a comma-separated list) replaces them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../chaos/chaos.mjs', import.meta.url));
const STEPS = 12;
const SEEDS = (process.env.CHAOS_SEED ?? '11,12,19').split(',').map((s) => Number(s.trim()));

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

for (const seed of SEEDS) test(`seed ${seed}: killing the runtime at chosen moments over many turns loses no message, duplicates no answer and leaves no turn stuck`, { timeout: (STEPS * 20 + 150) * 1000 }, async () => {
  const { code, out, err } = await run(['--steps', String(STEPS), '--seed', String(seed), '--json']);
  const line = out.trim().split('\n').at(-1) ?? '';
  let report;
  try {
    report = JSON.parse(line);
  } catch {
    assert.fail(`chaos (seed ${seed}) exited ${code} without a report:\n${out}\n${err.slice(-2000)}`);
  }
  const summary = JSON.stringify({ ...report, transcript: undefined, schedule: undefined }, null, 1);
  assert.equal(report.schedule.length, STEPS, `the schedule has the steps asked for: ${summary}`);
  assert.ok(report.kills >= 3, `the runtime was killed several times: ${summary}`);
  assert.ok(report.turnsSent >= 5, `many turns were sent: ${summary}`);
  assert.equal(report.lost, 0, `lost user messages (seed ${seed}): ${summary}`);
  assert.equal(report.duplicated, 0, `duplicated messages (seed ${seed}): ${summary}`);
  assert.equal(report.stuck, 0, `stuck turns (seed ${seed}): ${summary}\n${(report.transcript ?? []).join('\n')}`);
  assert.equal(report.misplaced, 0, `misplaced answers (seed ${seed}): ${summary}`);
  assert.ok(report.settled, `the system settled: ${summary}`);
  assert.equal(code, 0, `chaos exit code (seed ${seed})`);
});

// The benchmark's targets as ratios of one interleaved run (medians): ours against the runtime's
// floor (bench/floor-worker) and ours against Think. Printed under the table; nothing asserts them.

const FLOOR_TARGETS = [
  ['request → first text chunk', 'firstChunk', 1.5],
  ['  of which before the model is called', 'preModel', 1.5],
  ["turn overhead (model's last byte → terminal frame)", 'lastByteToDone', 1.5],
  ['first chunk under load', 'loadFirstChunk', 1.5],
  ['runtime CPU per streamed token (pooled over the reps)', 'cpuPerTokenPooled', 1.2],
  ['fan-out', 'fanout', 1.1],
  ['load wall time', 'loadWallMs', 1.25],
  ['memory per agent, histories built by turns', 'memPerAgentMiB', 1.15],
  ['memory per agent, histories posted in one request', 'memUploadPerAgentMiB', 1.15],
];

const THINK_TARGETS = [
  ['runtime CPU per streamed token (pooled over the reps)', 'cpuPerTokenPooled', 0.15],
  ['SQLite write transactions per turn', 'sqlCommits', 0.2],
  ['SQLite WAL bytes per turn', 'sqlWalKiB', 0.1],
];

/** Lines "name: ratio (target ≤ x) met|MISSED" for every target whose figures this run has. */
export function targetLines(results, median) {
  const lines = [];
  const check = (peer, list) => {
    for (const [name, key, limit] of list) {
      const value = median(results.ours[key] ?? []) / median(results[peer][key] ?? []);
      if (!Number.isFinite(value)) continue;
      lines.push(`  ${name}, ours/${peer}: ${value.toFixed(2)} (target ≤ ${limit}) ${value <= limit ? 'met' : 'MISSED'}`);
    }
  };
  check('floor', FLOOR_TARGETS);
  check('think', THINK_TARGETS);
  return lines;
}

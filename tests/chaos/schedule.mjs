// The chaos run's schedule: a pure function of the seed. Every random choice of a run (what each
// turn asks, whether a second message overlaps it, when the runtime is killed, how the user comes
// back) is drawn here, up front, from one seeded PRNG, so two runs with one seed carry out the
// same steps and their logs can be diffed. A kill is tied to something the script can observe
// (the Nth streamed chunk of a request, the request's start, a person's answer being applied, a
// recovery streaming) rather than to the clock; the only waits drawn as durations are the
// user's own pauses, which do not decide the order of events the agent sees.
// Owns: rng, drawSchedule.

/** A small seeded PRNG (mulberry32). */
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (weighted) => {
      const total = weighted.reduce((s, [w]) => s + w, 0);
      let x = next() * total;
      for (const [w, v] of weighted) {
        if ((x -= w) < 0) return v;
      }
      return weighted.at(-1)[1];
    },
  };
}

function drawTurn(r, n) {
  const kind = r.pick([[4, 'text'], [2, 'server-tool'], [2, 'client-tool'], [2, 'approval'], [1, 'stall']]);
  switch (kind) {
    case 'text': return { kind, text: `tell me about topic ${n} [tokens:${r.int(10, 80)}] [delay:${r.int(5, 30)}]` };
    case 'server-tool': return { kind, text: `what is the weather in City${n} [delay:${r.int(20, 80)}]` };
    case 'client-tool': return { kind, text: `what's my timezone (${n})? [delay:${r.int(10, 40)}]` };
    case 'approval': return { kind, text: `please delete file${n}.txt [delay:${r.int(10, 40)}]` };
    default: return { kind, text: `hello number ${n} [stall-once:${r.int(200, 1500)}]` };
  }
}

/**
 * Draw `steps` steps from `seed`. Each step:
 *   turn       {kind, text}: the message sent (after the agent is idle and people are answered,
 *              unless the previous step's user came back in a hurry, see `back`)
 *   overlap    null | {afterChunks, text}: a second message sent once the first streamed
 *              `afterChunks` chunks (queued behind it)
 *   cut        null | {at: 'start'}            kill when the request's first frame arrives
 *                   | {at: 'chunk', n}         kill when its Nth chunk arrives
 *                   | {at: 'queued', n}        (with overlap) kill when the first streamed N more
 *                                              chunks after the second was sent
 *                   | {at: 'answered'}         kill right after a person's pending answer is
 *                                              applied (if there is one this step)
 *                   | {at: 'behind', n}        when the message was sent while a recovery
 *                                              runs (so it waits behind it), kill when the
 *                                              recovery streamed N more chunks
 *              A kill whose moment never comes (the turn ended first) does not happen.
 *   back       how the user comes back after a kill:
 *              {mode: 'now'}                   reconnect and let the agent settle
 *              {mode: 'late', ms}              stay away `ms`, then as `now`
 *              {mode: 'quiet'}                 stay away 11 s: only the durable alarm wakes it
 *              {mode: 'rush'}                  reconnect, follow what is offered, and send the
 *                                              next step's message as soon as the probe is
 *                                              answered, while a recovery may still run
 *   recut      null | {n}: after coming back, kill again when a recovery turn streamed N chunks
 * @param {number} seed
 * @param {number} steps
 * @param {{quietProb?: number}} [opts]
 */
export function drawSchedule(seed, steps, { quietProb = 0.05 } = {}) {
  const r = rng(seed);
  const out = [];
  for (let i = 1; i <= steps; i++) {
    const turn = drawTurn(r, `${i}`);
    const overlap = r.next() < 0.2
      ? { afterChunks: r.int(0, 4), text: `and also topic ${i}b [tokens:${r.int(5, 30)}] [delay:10]` }
      : null;
    const at = r.pick([[5, null], [1, 'start'], [3, 'chunk'], [1, 'answered'], [overlap ? 2 : 0, 'queued'], [2, 'behind']]);
    const cut = at === null ? null : ['chunk', 'queued', 'behind'].includes(at) ? { at, n: r.int(1, 12) } : { at };
    let back = null;
    let recut = null;
    if (cut) {
      back = r.next() < quietProb
        ? { mode: 'quiet' }
        : r.pick([[5, { mode: 'now' }], [2, { mode: 'late', ms: r.int(100, 1500) }], [3, { mode: 'rush' }]]);
      if (back.mode !== 'quiet' && r.next() < 0.15) recut = { n: r.int(1, 6) };
    }
    out.push({ step: i, turn, overlap, cut, back, recut });
  }
  return out;
}

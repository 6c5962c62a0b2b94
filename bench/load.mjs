// Two phases of bench/run.mjs that put many agents to work at once (companion of run.mjs, same
// workers, client and model server):
//   - load: N fresh agents, one tab each, all sent a T-token turn in the same moment; the wall
//     time until the last agent's terminal frame, and each agent's request → first text chunk;
//   - the memory phase's upload mode: N agents, each sent ONE request whose body carries H − 2
//     earlier messages (a client that arrives with a transcript, e.g. after a page restored its
//     local copy) plus the new message, answered with 40 words; the tab stays open.

const now = () => performance.now();

/** Alternating user/assistant messages as a client would hold them (ids unique per agent). */
export function madeUpTranscript(agent, count) {
  return Array.from({ length: count }, (_, i) => ({
    id: `up-${agent}-${i}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    parts: [{ type: 'text', text: `${i % 2 === 0 ? 'question' : 'answer'} ${i} of agent ${agent}: ${'lorem ipsum dolor sit amet '.repeat(3)}` }],
  }));
}

/**
 * Load: for each repetition and worker (interleaved), opens `loadAgents` tabs on fresh agents,
 * primes each with a 3-token turn, then sends every agent its turn at once.
 */
export async function phaseLoad(kit, workers, opts, results, uniq) {
  const { openTab, turn, drop, settle, orderFor } = kit;
  for (let r = 0; r < opts.loadReps; r++) {
    for (const inst of orderFor(r, workers)) {
      const tabs = [];
      for (let a = 0; a < opts.loadAgents; a += 10) {
        const n = Math.min(10, opts.loadAgents - a);
        tabs.push(...(await Promise.all(Array.from({ length: n }, (_, k) => openTab(inst, `load-${uniq}-${r}-${a + k}`)))));
      }
      await Promise.all(tabs.map((c) => turn(c, '[tokens:3] prime')));
      await settle(inst);
      const t0 = now();
      const turns = await Promise.all(tabs.map((c, k) => turn(c, `[tokens:${opts.loadTokens}] load ${uniq} ${r} ${k}`)));
      const wall = Math.max(...turns.map((t) => t.doneAt)) - t0;
      const res = results[inst.key];
      res.loadWallMs.push(wall);
      for (const t of turns) res.loadFirstChunk.push(t.firstText - t.tSend);
      tabs.forEach(drop);
      await settle(inst);
    }
  }
}

/**
 * The upload mode's agents on one instance: each tab's transcript is set to `history − 2` made-up
 * messages, then one turn sends them all with the new message (so every agent ends with `history`
 * messages, like the turns mode). Returns the tabs, kept open.
 */
export async function uploadHistories(kit, inst, opts, uniq) {
  const { openTab, turn } = kit;
  const tabs = [];
  const t0 = now();
  for (let a = 0; a < opts.agents; a += 10) {
    const group = await Promise.all(Array.from({ length: Math.min(10, opts.agents - a) }, (_, k) => openTab(inst, `up-${uniq}-${a + k}`)));
    await Promise.all(group.map(async (c, k) => {
      c.transcript = madeUpTranscript(a + k, Math.max(0, opts.history - 2));
      await turn(c, `[tokens:40] agent ${a + k} arrives with its transcript`);
    }));
    tabs.push(...group);
  }
  return { tabs, seconds: (now() - t0) / 1000, messages: tabs.reduce((s, t) => s + t.transcript.length, 0) / tabs.length };
}

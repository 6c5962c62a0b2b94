// The cache phase of bench/run.mjs: how much of a long chat's input a provider's prompt cache
// would serve, ours against Think in one interleaved run.
//
// Both workers talk to their own scripted model started with `promptCache: true`
// (tests/support/model-server.mjs): it counts every request body's bytes, four to a token, as
// prompt tokens (the same rule for both workers, whatever their JSON looks like), and reports as
// `usage.prompt_tokens_details.cached_tokens` the longest start the body shares with one of the
// last 32 bodies it saw, the way OpenAI's cache serves it: nothing under 1,024 tokens, then in
// steps of 128 tokens (1,024, 1,152, …). A request whose start changed from one turn to the next
// (a moved window, a new summary, a timestamp) is billed in full.
//
// The chat: `cacheTurns` turns (500 by default; --cache-turns N; --quick: 150), each a tail
// request with one ~200-byte user message answered by 40 words, sent to ours and Think in turn
// (A B, B A, …) on a fresh agent each. Every request the model sees while a turn runs belongs to
// that turn (a summary call included). Reported per worker over the last 60% of the turns
// (turns 200–500 of 500): the cached share of the input tokens and the input tokens in total.

import { tailTurn } from './history.mjs';

const now = () => performance.now();

/** Options of this phase, from run.mjs's parsed flags. */
export function cacheOptions(int, quick) {
  const turns = int('cache-turns', quick ? 150 : 500);
  return { cacheTurns: turns, cacheFrom: Math.floor(turns * 0.4) };
}

const question = (key, i) => `question ${i} of the long chat on ${key}: ${'what would you say about this and that? '.repeat(4)}`;

/** Runs the long chat on fresh instances of ours and Think beside a caching model. */
export async function phaseCache(kit, opts, results, uniq, log) {
  const model = await kit.startModelServer({ promptCache: true });
  const records = model.promptCache.records;
  const insts = [];
  try {
    for (const key of ['ours', 'think']) {
      insts.push(await kit.startInstance(kit.specs[key], { modelUrl: model.url, persistDir: kit.persistDir(`${key}-cache`) }));
    }
    const tabs = {};
    for (const inst of insts) tabs[inst.key] = await kit.openTab(inst, `cache-${uniq}`);
    const per = Object.fromEntries(insts.map((i) => [i.key, { turns: [] }]));
    const t0 = now();
    for (let i = 0; i < opts.cacheTurns; i++) {
      for (const inst of kit.orderFor(i, insts)) {
        const mark = records.length;
        await tailTurn(tabs[inst.key], `[tokens:40] ${question(inst.key, i)}`);
        const seen = records.slice(mark);
        per[inst.key].turns.push({
          promptTokens: seen.reduce((s, r) => s + r.promptTokens, 0),
          cachedTokens: seen.reduce((s, r) => s + r.cachedTokens, 0),
          calls: seen.length,
        });
      }
      if ((i + 1) % 100 === 0) log(`  cache: ${i + 1} of ${opts.cacheTurns} turns (${((now() - t0) / 1000).toFixed(0)} s)`);
    }
    for (const inst of insts) {
      const counted = per[inst.key].turns.slice(opts.cacheFrom);
      const input = counted.reduce((s, t) => s + t.promptTokens, 0);
      const cached = counted.reduce((s, t) => s + t.cachedTokens, 0);
      const res = results[inst.key];
      res.cacheShare = [input ? (100 * cached) / input : NaN];
      res.cacheInputTokens = [input];
      res.cacheLastRequestTokens = [per[inst.key].turns.at(-1)?.promptTokens ?? NaN];
      res.cacheCalls = [counted.reduce((s, t) => s + t.calls, 0)];
      kit.drop(tabs[inst.key]);
    }
  } finally {
    for (const inst of insts) await inst.close();
    await model.close();
  }
}

/** The cache rows of the report's table. */
export function cacheRows(o, t, opts) {
  const span = `turns ${opts.cacheFrom}–${opts.cacheTurns}`;
  return [
    [`cached share of input tokens, ${span} of a ${opts.cacheTurns}-turn chat (%)`, o.cacheShare, t.cacheShare],
    [`  input tokens over those turns (bytes / 4)`, o.cacheInputTokens, t.cacheInputTokens],
    [`  model calls over those turns`, o.cacheCalls, t.cacheCalls],
    [`  input tokens of the last turn's request`, o.cacheLastRequestTokens, t.cacheLastRequestTokens],
  ];
}

/** The phase's target, from this run. */
export function cacheTargets(o, opts) {
  const share = o.cacheShare?.[0];
  if (!Number.isFinite(share)) return [];
  return [`  our cached share over turns ${opts.cacheFrom}–${opts.cacheTurns}: ${share.toFixed(1)}% (target ≥ 80%) ${share >= 80 ? 'met' : 'MISSED'}`];
}

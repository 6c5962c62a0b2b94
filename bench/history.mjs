// The history phase of bench/run.mjs: what a long conversation costs, ours against Think in one
// interleaved run. Every history is grown the same way on both workers: tail requests (only the
// messages the server lacks, as the README's `prepareSendMessagesRequest` sends them), each
// carrying up to 19 new user messages and answered by a 1-token model reply (20 messages a
// request, each request a few KiB, far under 1 MiB).
//
// - turn: the same 20-token turn (a tail request) on a short (50-message) and on a long
//   (4,000-message) history, interleaved A B, B A, …; send → `done: true`.
// - connect: a new tab to the long agent → ready (transcript frame, identity, resume answer).
// - memory: the isolate's live heap per agent (V8 heap snapshot over the inspector, wasm linear
//   memory included) with agents of 50 and of 4,000 messages, each size in a fresh process that
//   never evicts, every agent keeping one tab open. The base is taken after a warm agent of the
//   same size (grown the same way, then three turns), so what the isolate pays once for a
//   workload (compiled wasm and JS code, the allocator's first growth) is not counted per agent.

import { randomUUID } from 'node:crypto';
import { chatRequest, getMessages, isDone, userMessage } from '../tests/support/harness.mjs';

const now = () => performance.now();

/** Grows agent `name` to `messages` messages with batched tail requests; returns its tab. */
export async function seed(kit, inst, name, messages) {
  const c = await kit.openTab(inst, name);
  let count = c.transcript.length;
  let n = 0;
  while (count < messages) {
    const size = Math.min(20, messages - count);
    const batch = [];
    for (let i = 0; i < size - 1; i++) {
      const last = i === size - 2;
      batch.push(userMessage(newId(), `${last ? '[tokens:1] ' : ''}seed ${n++} of ${name}`));
    }
    const id = newId();
    c.cursor = c.frames.length;
    c.send(chatRequest(id, batch));
    const done = await c.waitFor(isDone(id), 120000);
    if (done.error) throw new Error(`seeding ${name} failed: ${done.body}`);
    count += size;
  }
  return c;
}

/**
 * One tail-request turn; send → done (ms). With `endFrameKiB`, the size of the frames for its
 * message list the turn sent this tab (transcripts and message updates) is pushed to it: what a
 * long chat's turn moves to the tab beside the stream.
 */
export async function tailTurn(c, text, endFrameKiB) {
  const id = newId();
  const mark = c.frames.length;
  c.cursor = mark;
  const t0 = now();
  c.send(chatRequest(id, [userMessage(newId(), text)]));
  const done = await c.waitFor(isDone(id), 120000);
  const ms = now() - t0;
  if (done.error) throw new Error(`turn failed: ${done.body}`);
  const lists = c.frames.slice(mark)
    .filter((f) => f?.type === 'cf_agent_chat_messages' || f?.type === 'cf_agent_message_updated');
  if (endFrameKiB) endFrameKiB.push(lists.reduce((kib, f) => kib + frameKiB(f), 0));
  return ms;
}
const newId = () => randomUUID().replace(/-/g, '').slice(0, 12);
/** A transcript frame's size as JSON text (KiB). */
const frameKiB = (frame) => JSON.stringify(frame).length / 1024;

export const SHORT = 50;
/** The long history's length unless `--history-long N` says otherwise. */
export const LONG = 4000;

/** Turn and connect rows, on the running pair. */
export async function phaseHistoryTurns(kit, pair, opts, results, uniq, log) {
  const LONG = opts.historyLong;
  const tabs = {};
  for (const inst of pair) {
    const t0 = now();
    const [short, long] = await Promise.all([
      seed(kit, inst, `hist-short-${uniq}`, SHORT),
      seed(kit, inst, `hist-long-${uniq}`, LONG),
    ]);
    const stored = await getMessages(inst.url, inst.binding, `hist-long-${uniq}`);
    log(`  ${inst.key}: seeded ${SHORT} + ${LONG} messages in ${((now() - t0) / 1000).toFixed(1)} s; the long agent stores ${stored.length}`);
    results[inst.key].historyStored = stored.length;
    tabs[inst.key] = { short, long };
    // Warm: one turn each, not measured.
    await tailTurn(short, '[tokens:20] warm');
    await tailTurn(long, '[tokens:20] warm');
  }
  for (let r = 0; r < opts.historyReps; r++) {
    for (const inst of kit.orderFor(r, pair)) {
      const res = results[inst.key];
      const { short, long } = tabs[inst.key];
      await kit.settle(inst);
      res.histShortTurn.push(await tailTurn(short, `[tokens:20] short ${r}`));
      await kit.settle(inst);
      res.histLongTurn.push(await tailTurn(long, `[tokens:20] long ${r}`, res.histTurnEndFrameKiB));
      await kit.settle(inst);
      const c = await kit.openTab(inst, `hist-long-${uniq}`);
      res.histConnect.push(c.connectMs);
      res.histConnectFrameKiB.push(Math.max(0, ...c.frames.filter((f) => f?.type === 'cf_agent_chat_messages')
        .map(frameKiB)));
      kit.drop(c);
    }
  }
  for (const { short, long } of Object.values(tabs)) { kit.drop(short); kit.drop(long); }
}

/** Live heap per agent at 50 and at 4,000 (`--history-long`) messages, each in fresh processes. */
export async function phaseHistoryMemory(kit, opts, results, uniq, log) {
  for (const size of [SHORT, opts.historyLong]) {
    for (const key of ['ours', 'think']) {
      const inspectorPort = await kit.freePort();
      const inst = await kit.startInstance(kit.specs[key], {
        modelUrl: kit.modelUrl, persistDir: kit.persistDir(`${key}-hist-${size}`), preventEviction: true, miniflare: { inspectorPort },
      });
      try {
        const cdp = await kit.inspect(inspectorPort);
        const warm = await seed(kit, inst, `histwarm-${uniq}-${size}`, size);
        for (let i = 0; i < 3; i++) await tailTurn(warm, `[tokens:20] warm ${i}`);
        await kit.settle(inst, 3000);
        const base = await kit.liveHeapMiB(cdp);
        const t0 = now();
        const tabs = await Promise.all(Array.from({ length: opts.historyAgents },
          (_, a) => seed(kit, inst, `histmem-${uniq}-${size}-${a}`, size)));
        // One 20-token turn each, as a conversation goes on.
        for (const c of tabs) await tailTurn(c, '[tokens:20] and now?');
        await kit.settle(inst, 3000);
        const after = await kit.liveHeapMiB(cdp);
        cdp.close();
        const perAgentKiB = ((after - base) * 1024) / opts.historyAgents;
        results[key][size === SHORT ? 'histHeapShortKiB' : 'histHeapLongKiB'].push(perAgentKiB);
        log(`  ${key}: ${opts.historyAgents} agents × ${size} messages (seeded in ${((now() - t0) / 1000).toFixed(1)} s): live heap ${base.toFixed(1)} → ${after.toFixed(1)} MiB, ${perAgentKiB.toFixed(0)} KiB per agent`);
        tabs.forEach(kit.drop);
        kit.drop(warm);
      } finally {
        await inst.close();
      }
    }
  }
}

/** The history rows of the report's table (`long`: the long history's length). */
export function historyRows(o, t, long = LONG) {
  const LONG = long;
  return [
    [`20-token turn, ${SHORT}-message history, tail request (ms)`, o.histShortTurn, t.histShortTurn],
    [`20-token turn, ${LONG}-message history, tail request (ms)`, o.histLongTurn, t.histLongTurn],
    [`  its frames for the tab's message list (KiB)`, o.histTurnEndFrameKiB, t.histTurnEndFrameKiB],
    [`connect to the ${LONG}-message agent → ready (ms)`, o.histConnect, t.histConnect],
    [`  its transcript frame (KiB)`, o.histConnectFrameKiB, t.histConnectFrameKiB],
    [`isolate's live heap per agent, ${SHORT} messages (KiB)`, o.histHeapShortKiB, t.histHeapShortKiB],
    [`isolate's live heap per agent, ${LONG} messages (KiB)`, o.histHeapLongKiB, t.histHeapLongKiB],
  ];
}

/** The targets, from the medians of this run (`long`: the long history's length). */
export function historyTargets(o, t, median, long = LONG) {
  const LONG = long;
  const lines = [];
  const ratio = (a, b) => median(a) / median(b);
  const show = (name, value, limit) => {
    if (!Number.isFinite(value)) return;
    lines.push(`  ${name}: ${value.toFixed(2)} (target ≤ ${limit}) ${value <= limit ? 'met' : 'MISSED'}`);
  };
  show(`long-history turn, ours/think`, ratio(o.histLongTurn, t.histLongTurn), 0.5);
  show(`long-history turn / our short-history turn`, ratio(o.histLongTurn, o.histShortTurn), 2);
  show(`connect to the long agent, ours/think`, ratio(o.histConnect, t.histConnect), 1);
  show(`our live heap per agent at ${LONG} / at ${SHORT} messages`, ratio(o.histHeapLongKiB, o.histHeapShortKiB), 2);
  return lines;
}

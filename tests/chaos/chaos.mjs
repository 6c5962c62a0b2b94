#!/usr/bin/env node
// Chaos run: one agent, many turns (text, server tools, client tools answered by the script,
// approvals approved by the script, turns cut before their first token, messages sent while a
// turn streams), while the runtime is killed (Miniflare disposed and re-created on the same
// storage and port) at random moments; now and then nobody reconnects for a while so that only
// the heartbeat alarm can wake the agent. At the end the script lets the system settle (answers
// whatever still waits for a person, lets recoveries finish) and checks the final transcript.
//
// Reports:
//   lost        user messages the agent acknowledged (a frame for their request, or seen in a
//               transcript) that are missing from the final transcript
//   duplicated  duplicate message ids, a user message stored twice, or two assistant messages
//               answering the same user message (an assistant directly after another one that
//               holds no tool call answered by a person, i.e. not an automatic continuation)
//   stuck       user messages with no assistant answer and no error after the system settled,
//               excluding turns parked on a person
//   misplaced   answers stored away from the user message they answer (e.g. after a message
//               sent while they streamed)
// and, for information: kills, turns sent, turns failed with an error message, requests that
// never got a terminal frame while their socket stayed open, tool results never continued.
// Exits non-zero if lost, duplicated, stuck or misplaced is > 0 (or the system never settled).
//
// Usage: node tests/chaos/chaos.mjs [--seconds 60] [--seed N] [--quiet-prob 0.05] [--build-dir DIR] [--json] [--verbose]
// Needs the built worker (bash scripts/build.sh).
// Owns: runChaos (also importable), the CLI.

import { pathToFileURL } from 'node:url';
import { startWorker, connect, chatRequest, userMessage, getMessages } from '../support/harness.mjs';
import { startModelServer } from '../support/model-server.mjs';
import { startStallProxy } from '../support/stall-proxy.mjs';

const AGENT = 'ChatAgent';
const ROOM = 'chaos';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const TIMEZONE_TOOL = {
  name: 'getUserTimezone',
  description: "The user's IANA timezone, read from the browser.",
  parameters: { type: 'object', properties: {} },
};
/** Tool names whose calls wait for a person (client tools and approvals). */
const HUMAN_TOOLS = new Set(['getUserTimezone', 'delete_file']);

/** A small seeded PRNG (mulberry32). */
function rng(seed) {
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

const newId = (() => {
  let n = 0;
  return (prefix) => `${prefix}-${Date.now().toString(36)}-${(++n).toString(36)}`;
})();

class Interrupted extends Error {}

const toolName = (p) => p.toolName ?? (p.type?.startsWith('tool-') ? p.type.slice(5) : undefined);
const isToolPart = (p) => typeof p?.toolCallId === 'string';

/**
 * Run the chaos scenario.
 * @param {{seconds?: number, seed?: number, quietProb?: number, buildDir?: string, log?: (msg: string) => void}} [opts]
 * @returns {Promise<object>} the report (see the header); `ok` is true when lost, duplicated and stuck are 0.
 */
export async function runChaos({ seconds = 60, seed = Date.now() % 1e9, quietProb = 0.05, buildDir, log = () => {} } = {}) {
  const r = rng(seed);
  const model = await startModelServer();
  const proxy = await startStallProxy(model);
  const w = await startWorker({ model: proxy, ...(buildDir ? { buildDir } : {}) });
  const started = Date.now();
  const deadline = started + seconds * 1000;

  const state = {
    tab: null,
    away: false, // the killer asked the user to stay away (alarm-only wake)
    killing: false,
    stop: false,
  };
  const stats = { kills: 0, targetedKills: 0, cutWhileWaiting: 0, quietPeriods: 0, turnsSent: 0, overlapping: 0, humanAnswers: 0, hungRequests: 0, errorsSeen: 0 };
  /** Every user message sent: id → {id, text, requestId, acked, kind}. */
  const sent = new Map();
  /** Message ids named by error frames (a turn failed with a message). */
  const failedIds = new Set();
  /** Tool call ids the script answered (result or approval). */
  const answered = new Set();

  const noteTranscript = (messages) => {
    for (const m of messages) if (sent.has(m.id)) sent.get(m.id).acked = true;
  };
  /** Assistant message id → request id (from `start` chunks), request id → its messageIds. */
  const answerOf = new Map();
  const turnIds = new Map();
  const noteFrame = (f) => {
    if (f?.type === 'cf_agent_use_chat_response') {
      for (const rec of sent.values()) if (rec.requestId === f.id) rec.acked = true;
      if (typeof f.body === 'string' && f.body.startsWith('{"type":"start"') && !f.error) {
        try {
          const chunk = JSON.parse(f.body);
          if (chunk.messageId) answerOf.set(chunk.messageId, f.id);
        } catch { /* not a chunk */ }
      }
      if (f.done && Array.isArray(f.messageIds) && f.messageIds.length && !turnIds.has(f.id)) turnIds.set(f.id, f.messageIds);
      if (f.error) {
        stats.errorsSeen++;
        for (const id of f.messageIds ?? []) failedIds.add(id);
        if (f.done && !f.messageIds) for (const rec of sent.values()) if (rec.requestId === f.id) failedIds.add(rec.id);
      }
    } else if (f?.type === 'cf_agent_chat_messages') {
      noteTranscript(f.messages ?? []);
    }
  };

  // ---- the killer ---------------------------------------------------------------------------
  let killing = Promise.resolve();
  /** Kill the runtime (one kill at a time); `why` is for the log. */
  function kill(why) {
    killing = killing.then(async () => {
      if (state.stop) return;
      state.killing = true;
      try {
        await w.restart();
        stats.kills++;
        log(`killed (${why})`);
      } catch (err) {
        log(`restart failed: ${err.message}`);
      } finally {
        state.killing = false;
      }
    });
    return killing;
  }
  /** Sometimes kill right after a risky moment (a submit, a person's answer), after 0-`maxMs`. */
  function maybeKillSoon(prob, maxMs, why) {
    if (state.stop || Date.now() >= deadline || r.next() >= prob) return;
    stats.targetedKills++;
    setTimeout(() => { if (!state.stop) kill(why); }, r.int(0, maxMs));
  }
  const killer = (async () => {
    while (!state.stop && Date.now() < deadline) {
      await sleep(r.int(300, 2500));
      if (state.stop || Date.now() >= deadline) break;
      await kill('random');
      if (r.next() < quietProb && Date.now() + 12000 < deadline) {
        // Nobody comes back for a while: only the durable alarm can wake the agent.
        stats.quietPeriods++;
        state.away = true;
        log('quiet period: no client, no request for 11 s');
        await sleep(11000);
        state.away = false;
      }
    }
  })();

  // ---- driver helpers -----------------------------------------------------------------------
  async function untilReachable() {
    while (state.away || state.killing) await sleep(50);
  }

  async function ensureTab() {
    for (;;) {
      await untilReachable();
      if (state.tab?.isOpen) return state.tab;
      try {
        const c = await connect(w.url, AGENT, ROOM);
        c.ws.on('message', () => noteFrame(c.frames.at(-1)));
        for (const f of c.frames) noteFrame(f);
        state.tab = c;
        return c;
      } catch {
        await sleep(100);
      }
    }
  }

  async function transcript() {
    for (;;) {
      await untilReachable();
      try {
        const ms = await getMessages(w.url, AGENT, ROOM);
        noteTranscript(ms);
        return ms;
      } catch {
        await sleep(100);
      }
    }
  }

  /** Wait for a frame on the tab; Interrupted if its socket closes. */
  async function waitFrame(c, pred, timeoutMs) {
    try {
      return await c.waitFor(pred, timeoutMs);
    } catch (err) {
      if (!c.isOpen) throw new Interrupted('socket closed');
      throw err;
    }
  }

  /** Follow whatever stream the agent offers until it is idle (probe answered resume_none). */
  async function untilIdle(c, budgetMs = 20000) {
    const until = Date.now() + budgetMs;
    while (Date.now() < until) {
      const probeId = newId('p');
      c.send({ type: 'cf_agent_stream_resume_request', probeId });
      const answer = await waitFrame(c, (f) => f.probeId === probeId, 5000);
      if (answer.type === 'cf_agent_stream_resume_none') return true;
      let id = answer.id;
      if (answer.type === 'cf_agent_stream_pending') {
        const offer = await waitFrame(c, (f) => (f.type === 'cf_agent_stream_resuming' && !f.probeId) || f.type === 'cf_agent_stream_resume_none', 20000);
        if (offer.type === 'cf_agent_stream_resume_none') continue;
        id = offer.id;
      }
      c.send({ type: 'cf_agent_stream_resume_ack', id });
      await waitFrame(c, (f) => f.type === 'cf_agent_use_chat_response' && f.id === id && f.done === true, 20000);
      // A terminal error record is offered again on every probe until a new turn: that is idle.
      const end = c.frames.findLast((f) => f.type === 'cf_agent_use_chat_response' && f.id === id && f.done);
      if (end?.error) return true;
    }
    return false;
  }

  /** Answer every call that waits for a person in the transcript; returns how many. */
  function answerPeople(c, messages) {
    let n = 0;
    for (const m of messages) {
      if (m.role !== 'assistant') continue;
      for (const p of m.parts ?? []) {
        if (!isToolPart(p)) continue;
        if (p.state === 'input-available' && toolName(p) === 'getUserTimezone') {
          c.send({ type: 'cf_agent_tool_result', toolCallId: p.toolCallId, toolName: 'getUserTimezone', output: { timezone: 'Europe/Paris' }, autoContinue: true });
          answered.add(p.toolCallId);
          n++;
        } else if (p.state === 'approval-requested') {
          c.send({ type: 'cf_agent_tool_approval', toolCallId: p.toolCallId, approved: true, autoContinue: true });
          answered.add(p.toolCallId);
          n++;
        }
      }
    }
    stats.humanAnswers += n;
    return n;
  }

  let turnNo = 0;
  function nextText() {
    const n = ++turnNo;
    const kind = r.pick([[4, 'text'], [2, 'server-tool'], [2, 'client-tool'], [2, 'approval'], [1, 'stall']]);
    switch (kind) {
      case 'text': return { kind, text: `tell me about topic ${n} [tokens:${r.int(10, 80)}] [delay:${r.int(5, 30)}]` };
      case 'server-tool': return { kind, text: `what is the weather in City${n} [delay:${r.int(20, 80)}]` };
      case 'client-tool': return { kind, text: `what's my timezone (${n})? [delay:${r.int(10, 40)}]` };
      case 'approval': return { kind, text: `please delete file${n}.txt [delay:${r.int(10, 40)}]` };
      default: return { kind, text: `hello number ${n} [stall-once:${r.int(200, 1500)}]` };
    }
  }

  function send(c, history, { kind, text }) {
    const requestId = newId('r');
    const msg = userMessage(newId('u'), text);
    sent.set(msg.id, { id: msg.id, text, kind, requestId, acked: false });
    // What the request answers: its trailing user messages (the agent's messageIds).
    const trailing = [];
    for (const m of [...history, msg].reverse()) {
      if (m.role !== 'user') break;
      trailing.unshift(m.id);
    }
    turnIds.set(requestId, trailing);
    stats.turnsSent++;
    c.send(chatRequest(requestId, [...history, msg], { clientTools: [TIMEZONE_TOOL] }));
    return { requestId, msg };
  }

  /** One round: settle the agent, answer people, send a new turn and follow it. */
  async function round() {
    const c = await ensureTab();
    await untilIdle(c);
    let messages = await transcript();
    if (answerPeople(c, messages) > 0) {
      maybeKillSoon(0.25, 120, 'right after a person answered');
      await sleep(r.int(0, 200));
      await untilIdle(c);
      messages = await transcript();
    }
    const first = send(c, messages, nextText());
    maybeKillSoon(0.15, 400, 'right after a submit');
    if (r.next() < 0.2) {
      // A second message while the first one streams (queued behind it).
      await sleep(r.int(50, 600));
      if (!c.isOpen) throw new Interrupted('socket closed');
      stats.overlapping++;
      const pending = [...messages, first.msg];
      const second = send(c, pending, { kind: 'text', text: `and also topic ${++turnNo} [tokens:${r.int(5, 30)}] [delay:10]` });
      maybeKillSoon(0.4, 300, 'while a message waits behind a streaming turn');
      await waitDone(c, first.requestId);
      await waitDone(c, second.requestId);
    } else {
      await waitDone(c, first.requestId);
    }
  }

  async function waitDone(c, requestId) {
    try {
      await waitFrame(c, (f) => f.type === 'cf_agent_use_chat_response' && f.id === requestId && f.done === true, 30000);
    } catch (err) {
      if (err instanceof Interrupted) {
        stats.cutWhileWaiting++;
        throw err;
      }
      stats.hungRequests++;
      log(`request ${requestId}: no terminal frame in 30 s while the socket stayed open`);
    }
  }

  // ---- the driver ---------------------------------------------------------------------------
  while (Date.now() < deadline) {
    try {
      await round();
    } catch (err) {
      if (!(err instanceof Interrupted)) log(`round: ${err.message.split('\n')[0]}`);
      // The runtime was killed under us (or a wait timed out): start over with a fresh tab.
      if (state.tab && !state.tab.isOpen) state.tab = null;
      if (r.next() < 0.3) await sleep(r.int(0, 1500)); // sometimes the user comes back late
    }
  }
  state.stop = true;
  await killer;
  await killing;

  // ---- settle -------------------------------------------------------------------------------
  const settleStart = Date.now();
  let final = null;
  let settled = false;
  let prev = '';
  while (Date.now() - settleStart < 60000) {
    try {
      const c = await ensureTab();
      const idle = await untilIdle(c, 25000);
      const messages = await transcript();
      if (answerPeople(c, messages) > 0) {
        await sleep(300);
        continue;
      }
      const snapshot = JSON.stringify(messages);
      if (idle && snapshot === prev) {
        final = messages;
        settled = true;
        break;
      }
      prev = snapshot;
      await sleep(1000);
    } catch (err) {
      log(`settle: ${err.message.split('\n')[0]}`);
      state.tab = null;
      await sleep(200);
    }
  }
  if (!final) final = await transcript();
  // The error a reconnecting tab is told about counts as the failure message of its turn.
  try {
    const c = await connect(w.url, AGENT, ROOM);
    c.ws.on('message', () => noteFrame(c.frames.at(-1)));
    const probeId = newId('p');
    c.send({ type: 'cf_agent_stream_resume_request', probeId });
    const answer = await c.waitFor((f) => f.probeId === probeId, 5000);
    if (answer.type === 'cf_agent_stream_resuming') {
      c.send({ type: 'cf_agent_stream_resume_ack', id: answer.id });
      await c.waitFor((f) => f.type === 'cf_agent_use_chat_response' && f.id === answer.id && f.done, 10000);
      for (const f of c.frames) noteFrame(f);
    }
    await c.close();
  } catch (err) {
    log(`final probe: ${err.message.split('\n')[0]}`);
  }
  state.tab?.ws.terminate();

  const report = analyse(final, { sent, failedIds, answered, answerOf, turnIds });
  Object.assign(report, stats, {
    seed,
    seconds,
    settled,
    settleMs: Date.now() - settleStart,
    messages: final.length,
    modelRequests: model.requests.length,
  });
  report.ok = report.lost === 0 && report.duplicated === 0 && report.stuck === 0 && report.misplaced === 0 && settled;
  if (!report.ok) report.transcript = final.map((m) => summarize(m));

  await w.close();
  await proxy.close();
  await model.close();
  return report;
}

function summarize(m) {
  const parts = (m.parts ?? []).map((p) => {
    if (p.type === 'text') return `text(${p.state ?? ''}):${p.text.slice(0, 40)}`;
    if (isToolPart(p)) return `${p.type}[${p.toolCallId}]:${p.state}`;
    return p.type;
  });
  return `${m.role} ${m.id} ${parts.join(' | ')}`;
}

/** Check the invariants on the final transcript. */
export function analyse(messages, { sent, failedIds, answered, answerOf = new Map(), turnIds = new Map() }) {
  const details = { lost: [], duplicated: [], stuck: [], misplaced: [], parked: [], uncontinued: [] };
  const ids = messages.map((m) => m.id);
  const present = new Set(ids);

  // Lost: acknowledged by the agent, gone from the transcript.
  let unacknowledged = 0;
  for (const rec of sent.values()) {
    if (!rec.acked) {
      if (!present.has(rec.id)) unacknowledged++;
      continue;
    }
    if (!present.has(rec.id)) details.lost.push(`${rec.id} (${rec.kind}: ${rec.text})`);
  }

  // Duplicated: ids, user texts, or a second assistant answering the same user message.
  const seenIds = new Set();
  for (const id of ids) {
    if (seenIds.has(id)) details.duplicated.push(`id ${id} stored twice`);
    seenIds.add(id);
  }
  const seenTexts = new Map();
  for (const m of messages) {
    if (m.role !== 'user') continue;
    const text = (m.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('');
    if (seenTexts.has(text)) details.duplicated.push(`user text stored twice: ${seenTexts.get(text)} and ${m.id}`);
    seenTexts.set(text, m.id);
  }
  for (let i = 1; i < messages.length; i++) {
    const [before, m] = [messages[i - 1], messages[i]];
    if (m.role !== 'assistant' || before.role !== 'assistant') continue;
    const continued = (before.parts ?? []).some((p) => isToolPart(p) && HUMAN_TOOLS.has(toolName(p))
      && ['output-available', 'output-error', 'output-denied', 'approval-responded'].includes(p.state));
    if (!continued) details.duplicated.push(`assistant ${m.id} answers again after ${before.id}`);
  }

  // Misplaced: an answer whose turn is known (its start chunk and terminal frame were seen)
  // must follow the user message(s) it answers, before any later user message.
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== 'assistant') continue;
    const ids = turnIds.get(answerOf.get(m.id));
    if (!ids) continue;
    const question = messages.slice(0, i).findLast((x) => x.role === 'user');
    if (!question || !ids.includes(question.id)) {
      details.misplaced.push(`${m.id} answers ${ids.join(',')} but follows ${question?.id ?? 'nothing'}`);
    }
  }

  // Stuck: a run of user messages not followed by an assistant, without an error message.
  for (let i = 0; i < messages.length; i++) {
    if (messages[i].role !== 'user') continue;
    let j = i;
    while (j < messages.length && messages[j].role === 'user') j++;
    const run = messages.slice(i, j);
    i = j - 1;
    const describe = (m) => `${m.id} (${sent.get(m.id)?.kind ?? '?'}: ${sent.get(m.id)?.text ?? ''})`;
    if (j < messages.length) {
      // Answered, possibly jointly; when the answer's turn is known, by a turn that answers it.
      const ids = turnIds.get(answerOf.get(messages[j].id));
      if (ids) details.stuck.push(...run.filter((m) => !ids.includes(m.id) && !failedIds.has(m.id)).map(describe));
      continue;
    }
    if (run.some((m) => failedIds.has(m.id))) continue;
    details.stuck.push(...run.map(describe));
  }
  // Parked on a person (never expected after the settle phase answered them) and tool results
  // that no continuation picked up: reported, not counted as stuck.
  const last = messages.at(-1);
  if (last?.role === 'assistant') {
    for (const p of last.parts ?? []) {
      if (!isToolPart(p)) continue;
      if (p.state === 'approval-requested' || (p.state === 'input-available' && toolName(p) === 'getUserTimezone')) {
        details.parked.push(p.toolCallId);
      }
    }
  }
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== 'assistant') continue;
    const settledHuman = (m.parts ?? []).filter((p) => isToolPart(p) && answered.has(p.toolCallId)
      && ['output-available', 'approval-responded'].includes(p.state));
    if (settledHuman.length && messages[i + 1]?.role !== 'assistant') {
      details.uncontinued.push(...settledHuman.map((p) => `${m.id}/${p.toolCallId}:${p.state}`));
    }
  }
  const failed = messages.filter((m) => m.role === 'user' && failedIds.has(m.id)).length;
  return {
    lost: details.lost.length,
    duplicated: details.duplicated.length,
    stuck: details.stuck.length,
    misplaced: details.misplaced.length,
    parked: details.parked.length,
    uncontinuedToolResults: details.uncontinued.length,
    failedWithMessage: failed,
    unacknowledged,
    details,
  };
}

// ---- CLI ------------------------------------------------------------------------------------
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : dflt;
  };
  const verbose = args.includes('--verbose');
  const json = args.includes('--json');
  const seconds = Number(opt('seconds', '60'));
  const seed = Number(opt('seed', String(Date.now() % 1e9)));
  const quietProb = Number(opt('quiet-prob', '0.05'));
  const buildDir = opt('build-dir', undefined);
  const t0 = Date.now();
  const log = (msg) => { if (verbose) console.error(`[chaos +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`); };
  // A hard bound on the whole run (chaos time + settle + slack).
  const guard = setTimeout(() => {
    console.error(`chaos: did not finish within ${seconds + 120} s`);
    process.exit(2);
  }, (seconds + 120) * 1000);
  guard.unref();
  const report = await runChaos({ seconds, seed, quietProb, buildDir, log });
  if (json) {
    console.log(JSON.stringify(report));
  } else {
    console.log(`chaos: ${seconds}s seed=${report.seed} kills=${report.kills} (targeted ${report.targetedKills}, turns cut while followed ${report.cutWhileWaiting}) quiet=${report.quietPeriods} turns=${report.turnsSent} `
      + `(overlapping ${report.overlapping}) human answers=${report.humanAnswers} messages=${report.messages} model requests=${report.modelRequests}`);
    console.log(`lost=${report.lost} duplicated=${report.duplicated} stuck=${report.stuck} misplaced=${report.misplaced}`
      + ` | failed-with-message=${report.failedWithMessage} parked=${report.parked} uncontinued-tool-results=${report.uncontinuedToolResults}`
      + ` hung-requests=${report.hungRequests} unacknowledged=${report.unacknowledged} settled=${report.settled} (${report.settleMs} ms)`);
    for (const [k, v] of Object.entries(report.details)) if (v.length) console.log(`  ${k}: ${v.join('; ')}`);
    if (!report.ok && report.transcript) console.log(`final transcript:\n  ${report.transcript.join('\n  ')}`);
  }
  process.exit(report.ok ? 0 : 1);
}

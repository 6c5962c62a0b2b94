#!/usr/bin/env node
// Chaos run: one agent, many turns (text, server tools, client tools answered by the script,
// approvals approved by the script, turns cut before their first token, messages sent while a
// turn streams), while the runtime is killed (Miniflare disposed and re-created on the same
// storage and port) at chosen moments; now and then nobody reconnects for a while so that only
// the heartbeat alarm can wake the agent, and now and then the user comes back in a hurry and
// writes while a recovery may still run. At the end the script lets the system settle (answers
// whatever still waits for a person, lets recoveries finish) and checks the final transcript.
//
// A run is an experiment: its schedule (tests/chaos/schedule.mjs) is a pure function of the
// seed and the step count — a fixed number of steps, each a message (sometimes two), maybe a
// kill tied to an observable moment (the Nth chunk of the request, its first frame, a person's
// answer applied, a recovery streaming), and how the user comes back. Ids are numbered, not
// timed. The same seed gives the same steps; what differs between two runs is only what the
// system did, which `trace` (in --json, with `schedule`) records step by step for diffing.
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
// Usage: node tests/chaos/chaos.mjs [--seed N] [--steps 30] [--seconds S] [--quiet-prob 0.05]
//          [--heartbeat-ms 2000] [--build-dir DIR] [--json] [--verbose]
//   --seed     the schedule's seed (default 1); --steps its length; --seconds, when given, stops
//              starting new steps after that long (a bound, not part of the experiment).
//   --heartbeat-ms  how far ahead a running turn's durable alarm is kept (the test build's
//              DEBUG_HEARTBEAT_MS, default 2000); a quiet period lasts a second longer than it.
// Needs the test build (bash scripts/build.sh --test), or --build-dir DIR: a build without the
// switch keeps its 10 s heartbeat, so pass --heartbeat-ms 10000 with it.
// Owns: runChaos (also importable), the CLI.

import { pathToFileURL } from 'node:url';
import { startWorker, connect, chatRequest, userMessage, getMessages } from '../support/harness.mjs';
import { startModelServer } from '../support/model-server.mjs';
import { startStallProxy } from '../support/stall-proxy.mjs';
import { drawSchedule } from './schedule.mjs';

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

class Interrupted extends Error {}

const toolName = (p) => p.toolName ?? (p.type?.startsWith('tool-') ? p.type.slice(5) : undefined);
const isToolPart = (p) => typeof p?.toolCallId === 'string';

/**
 * Run the chaos scenario: the steps of `drawSchedule(seed, steps)`, then the settle phase.
 * @param {{steps?: number, seconds?: number, seed?: number, quietProb?: number, heartbeatMs?: number, buildDir?: string,
 *   log?: (msg: string) => void}} [opts] `seconds`, when given, stops starting new steps after
 *   that long (the report's `stepsRun` says how many ran).
 * @returns {Promise<object>} the report (see the header), with `schedule` (the drawn steps) and
 *   `trace` (what each step observed); `ok` is true when lost, duplicated, stuck and misplaced are 0.
 */
export async function runChaos({ steps = 30, seconds, seed = 1, quietProb = 0.05, heartbeatMs = 2000, buildDir, log = () => {} } = {}) {
  const schedule = drawSchedule(seed, steps, { quietProb });
  const model = await startModelServer();
  const proxy = await startStallProxy(model);
  const bindings = { DEBUG_HEARTBEAT_MS: String(heartbeatMs) };
  const w = await startWorker({ model: proxy, bindings, ...(buildDir ? { buildDir } : {}) });
  const started = Date.now();
  const deadline = seconds ? started + seconds * 1000 : Infinity;

  const state = { tab: null, rush: false, recut: null };
  const stats = { kills: 0, targetedKills: 0, cutWhileWaiting: 0, quietPeriods: 0, turnsSent: 0, overlapping: 0, humanAnswers: 0, hungRequests: 0, errorsSeen: 0, stepsRun: 0 };
  /** What each step observed (differs between runs only where the system did). */
  const trace = [];
  let events = [];
  // Ids the agent mints (recovery and continuation requests) are random: the trace names them
  // s1, s2… in order of appearance, so two runs of one seed can be diffed line by line.
  const minted = new Map();
  const named = (msg) => msg.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (uuid) => {
    if (!minted.has(uuid)) minted.set(uuid, `s${minted.size + 1}`);
    return minted.get(uuid);
  });
  const note = (msg) => {
    events.push(named(msg));
    log(msg);
  };
  /** Every user message sent: id → {id, text, requestId, acked, kind}. */
  const sent = new Map();
  /** Message ids named by error frames (a turn failed with a message). */
  const failedIds = new Set();
  /** Tool call ids the script answered (result or approval). */
  const answered = new Set();
  // Ids are numbered per kind, so message and request ids depend on the schedule only.
  const idNo = new Map();
  const newId = (prefix) => {
    idNo.set(prefix, (idNo.get(prefix) ?? 0) + 1);
    return `${prefix}-${seed.toString(36)}-${idNo.get(prefix).toString(36)}`;
  };

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

  // ---- observing a tab ----------------------------------------------------------------------
  /**
   * Resolves with `test(frames)` once it is not undefined (checked now and on every frame), or
   * null when the socket closes or `timeoutMs` passes. Does not move the tab's cursor.
   */
  function observe(c, test, timeoutMs) {
    return new Promise((resolve) => {
      let timer;
      const finish = (v) => {
        clearTimeout(timer);
        c.ws.off('message', check);
        c.ws.off('close', onClose);
        resolve(v);
      };
      const check = () => {
        const v = test(c.frames);
        if (v !== undefined) finish(v);
      };
      const onClose = () => finish(null);
      timer = setTimeout(() => finish(null), timeoutMs);
      c.ws.on('message', check);
      c.ws.on('close', onClose);
      check();
      if (!c.isOpen) finish(null);
    });
  }
  const isChunkOf = (f, id) => f?.type === 'cf_agent_use_chat_response' && f.id === id && !f.done && !f.replay && !f.error
    && typeof f.body === 'string' && f.body.startsWith('{');
  const chunksSince = (frames, from, id) => {
    let n = 0;
    for (let i = from; i < frames.length; i++) if (isChunkOf(frames[i], id)) n++;
    return n;
  };
  const doneSince = (frames, from, id) => {
    for (let i = from; i < frames.length; i++) {
      const f = frames[i];
      if (f?.type === 'cf_agent_use_chat_response' && f.id === id && f.done === true) return true;
    }
    return false;
  };

  // ---- the killer ---------------------------------------------------------------------------
  async function kill(why) {
    stats.targetedKills++;
    try {
      await w.restart();
      stats.kills++;
      note(`killed (${why})`);
    } catch (err) {
      note(`restart failed: ${err.message}`);
    }
    state.tab?.ws.terminate();
    state.tab = null;
  }

  /** The user after a kill: back now, late, after a quiet period, or in a hurry. */
  async function comeBack(s) {
    const back = s.back ?? { mode: 'now' };
    if (back.mode === 'late') await sleep(back.ms);
    if (back.mode === 'quiet') {
      // Nobody comes back for a while: only the durable alarm can wake the agent.
      stats.quietPeriods++;
      note(`quiet period: no client, no request for ${heartbeatMs + 1000} ms`);
      await sleep(heartbeatMs + 1000);
    }
    state.rush = back.mode === 'rush';
    state.recut = s.recut?.n ?? null;
  }

  // ---- driver helpers -----------------------------------------------------------------------
  /** The open tab, or a new one that, like the stock client, acknowledges a stream offered on connect. */
  async function ensureTab() {
    for (;;) {
      if (state.tab?.isOpen) return state.tab;
      try {
        const c = await connect(w.url, AGENT, ROOM);
        c.ws.on('message', () => noteFrame(c.frames.at(-1)));
        for (const f of c.frames) noteFrame(f);
        await c.waitFor('cf_agent_identity', 5000);
        const offer = c.frames.find((f) => f.type === 'cf_agent_stream_resuming' && !f.probeId);
        if (offer) {
          c.send({ type: 'cf_agent_stream_resume_ack', id: offer.id });
          note(`connected: offered ${offer.id}${c.frames.some((f) => f.type === 'cf_agent_chat_recovering' && f.recovering) ? ' during a recovery' : ''}`);
        }
        state.tab = c;
        return c;
      } catch {
        state.tab = null;
        await sleep(100);
      }
    }
  }

  async function transcript() {
    for (;;) {
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

  /** A user in a hurry: one probe; whatever is offered is followed, but nobody waits for it. */
  async function glance(c) {
    const probeId = newId('p');
    c.send({ type: 'cf_agent_stream_resume_request', probeId });
    const answer = await waitFrame(c, (f) => f.probeId === probeId, 5000);
    note(`probe: ${answer.type}${answer.reason ? ` (${answer.reason})` : ''}${answer.id ? ` ${answer.id}` : ''}`);
    if (answer.type === 'cf_agent_stream_resuming') c.send({ type: 'cf_agent_stream_resume_ack', id: answer.id });
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
    note(`sent ${requestId} (${msg.id}, ${kind})`);
    return { requestId, msg };
  }

  async function waitDone(c, requestId, from) {
    const done = await observe(c, (frames) => (doneSince(frames, from, requestId) ? true : undefined), 30000);
    if (done) return;
    if (!c.isOpen) {
      stats.cutWhileWaiting++;
      throw new Interrupted('socket closed');
    }
    stats.hungRequests++;
    note(`request ${requestId}: no terminal frame in 30 s while the socket stayed open`);
  }

  /** After coming back: kill again once a recovery turn streamed `n` chunks live. */
  async function recut(c, n) {
    const from = c.mark();
    const hit = await observe(c, (frames) => {
      const counts = new Map();
      for (let i = from; i < frames.length; i++) {
        const f = frames[i];
        if (f?.type !== 'cf_agent_use_chat_response' || !f.continuation) continue;
        if (f.done) counts.set(f.id, -Infinity);
        else if (isChunkOf(f, f.id)) counts.set(f.id, (counts.get(f.id) ?? 0) + 1);
        if ((counts.get(f.id) ?? 0) >= n) return true;
      }
      return undefined;
    }, 5000);
    if (hit) await kill(`a recovery streamed ${n} chunks`);
    return Boolean(hit);
  }

  /** One step of the schedule. */
  async function runStep(s) {
    let c = await ensureTab();
    if (state.recut !== null) {
      const n = state.recut;
      state.recut = null;
      if (await recut(c, n)) c = await ensureTab();
    }
    const rush = state.rush;
    state.rush = false;
    let messages;
    if (rush) {
      await glance(c);
      messages = await transcript();
    } else {
      await untilIdle(c);
      messages = await transcript();
      const from = c.mark();
      if (answerPeople(c, messages) > 0) {
        note('answered a person');
        if (s.cut?.at === 'answered') {
          const applied = await observe(c, (frames) => (frames.slice(from).some((f) => f.type === 'cf_agent_message_updated') ? true : undefined), 3000);
          if (applied) {
            await kill('right after a person answered');
            await comeBack(s);
            return;
          }
        }
        await untilIdle(c);
        messages = await transcript();
      }
    }
    const from = c.mark();
    const first = send(c, messages, s.turn);
    let second = null;
    let chunksAtSecond = 0;
    if (s.overlap) {
      // A second message while the first one streams (queued behind it).
      const n = s.overlap.afterChunks;
      const ready = await observe(c, (frames) => (chunksSince(frames, from, first.requestId) >= n || doneSince(frames, from, first.requestId) ? true : undefined), 30000);
      if (!ready || !c.isOpen) throw new Interrupted('socket closed');
      stats.overlapping++;
      chunksAtSecond = chunksSince(c.frames, from, first.requestId);
      second = send(c, [...messages, first.msg], { kind: 'text', text: s.overlap.text });
    }
    const at = s.cut?.at;
    if (at === 'behind') {
      const recovering = c.frames.findLast((f) => f.type === 'cf_agent_chat_recovering');
      if (recovering?.recovering) {
        // The message waits behind a recovery: kill the recovery under it.
        const ours = new Set([first.requestId, second?.requestId]);
        const hit = await observe(c, (frames) => {
          let n = 0;
          for (let i = from; i < frames.length; i++) {
            const f = frames[i];
            if (f?.type === 'cf_agent_chat_recovering' && !f.recovering) return false;
            if (isChunkOf(f, f?.id) && !ours.has(f.id)) n++;
          }
          return n >= s.cut.n ? true : undefined;
        }, 30000);
        if (hit) {
          await kill(`a recovery with ${first.requestId} waiting behind it`);
          await comeBack(s);
          return;
        }
        if (!c.isOpen) throw new Interrupted('socket closed');
      }
      note(`no kill: no recovery ran under ${first.requestId}`);
    }
    if (at === 'start' || at === 'chunk' || (at === 'queued' && second)) {
      const target = at === 'start' ? 1 : at === 'chunk' ? s.cut.n : chunksAtSecond + s.cut.n;
      const hit = await observe(c, (frames) => {
        if (doneSince(frames, from, first.requestId)) return false;
        return chunksSince(frames, from, first.requestId) >= target ? true : undefined;
      }, 30000);
      if (hit) {
        await kill(at === 'queued' ? `while ${second.requestId} waits, chunk ${target} of ${first.requestId}` : `chunk ${target} of ${first.requestId}`);
        await comeBack(s);
        return;
      }
      if (!c.isOpen) throw new Interrupted('socket closed');
      note(`no kill: ${first.requestId} ended before chunk ${target}`);
    }
    await waitDone(c, first.requestId, from);
    if (second) await waitDone(c, second.requestId, from);
  }

  // ---- the driver ---------------------------------------------------------------------------
  for (const s of schedule) {
    if (Date.now() >= deadline) break;
    events = [];
    trace.push({ step: s.step, events });
    stats.stepsRun++;
    log(`step ${s.step}: ${JSON.stringify(s)}`);
    try {
      await runStep(s);
    } catch (err) {
      if (!(err instanceof Interrupted)) note(`step: ${err.message.split('\n')[0]}`);
      // The runtime was killed under us (or a wait timed out): start over with a fresh tab.
      if (state.tab && !state.tab.isOpen) state.tab = null;
    }
  }
  events = [];
  trace.push({ step: 'settle', events });

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
      note(`settle: ${err.message.split('\n')[0]}`);
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
    note(`final probe: ${err.message.split('\n')[0]}`);
  }
  state.tab?.ws.terminate();

  const report = analyse(final, { sent, failedIds, answered, answerOf, turnIds });
  Object.assign(report, stats, {
    seed,
    steps,
    settled,
    elapsedMs: Date.now() - started,
    settleMs: Date.now() - settleStart,
    messages: final.length,
    modelRequests: model.requests.length,
    schedule,
    trace,
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
  const steps = Number(opt('steps', '30'));
  const seconds = opt('seconds', undefined) === undefined ? undefined : Number(opt('seconds'));
  const seed = Number(opt('seed', '1'));
  const quietProb = Number(opt('quiet-prob', '0.05'));
  const heartbeatMs = Number(opt('heartbeat-ms', '2000'));
  const buildDir = opt('build-dir', undefined);
  const t0 = Date.now();
  const log = (msg) => { if (verbose) console.error(`[chaos +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`); };
  // A hard bound on the whole run (the steps, or the seconds bound, + settle + slack).
  const boundS = Math.min(seconds ?? Infinity, steps * 20) + 150;
  const guard = setTimeout(() => {
    console.error(`chaos: did not finish within ${boundS} s`);
    process.exit(2);
  }, boundS * 1000);
  guard.unref();
  const report = await runChaos({ steps, seconds, seed, quietProb, heartbeatMs, buildDir, log });
  if (json) {
    console.log(JSON.stringify(report));
  } else {
    console.log(`chaos: seed=${report.seed} steps=${report.stepsRun}/${report.steps} (${(report.elapsedMs / 1000).toFixed(0)} s) kills=${report.kills} (targeted ${report.targetedKills}, turns cut while followed ${report.cutWhileWaiting}) quiet=${report.quietPeriods} turns=${report.turnsSent} `
      + `(overlapping ${report.overlapping}) human answers=${report.humanAnswers} messages=${report.messages} model requests=${report.modelRequests}`);
    console.log(`lost=${report.lost} duplicated=${report.duplicated} stuck=${report.stuck} misplaced=${report.misplaced}`
      + ` | failed-with-message=${report.failedWithMessage} parked=${report.parked} uncontinued-tool-results=${report.uncontinuedToolResults}`
      + ` hung-requests=${report.hungRequests} unacknowledged=${report.unacknowledged} settled=${report.settled} (${report.settleMs} ms)`);
    for (const [k, v] of Object.entries(report.details)) if (v.length) console.log(`  ${k}: ${v.join('; ')}`);
    if (!report.ok && report.transcript) console.log(`final transcript:\n  ${report.transcript.join('\n  ')}`);
  }
  process.exit(report.ok ? 0 : 1);
}

// Tests for the scripted OpenAI-compatible model server (tests/support/model-server.mjs):
// every reply rule, the SSE chunk format, the admin endpoints and the CLI.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startModelServer, planReply, PromptCache } from './model-server.mjs';

let srv;
before(async () => { srv = await startModelServer(); });
after(async () => { await srv.close(); });

const user = (content) => ({ role: 'user', content });
const toolDef = (name) => ({ type: 'function', function: { name, description: name, parameters: { type: 'object', properties: {} } } });

/**
 * POST a streaming chat completion and parse the SSE stream.
 * Returns { status, headers, events /* parsed JSON or 'DONE' *\/, readError, raw }.
 * `stopAfter(events)` returning true aborts the request (for [hang]).
 */
async function complete(body, { stopAfter, stream = true } = {}) {
  const ac = new AbortController();
  const res = await fetch(`${srv.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'scripted-model', stream, ...body }),
    signal: ac.signal,
  });
  const out = { status: res.status, headers: res.headers, events: [], readError: null, raw: '' };
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    out.json = await res.json();
    return out;
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const text = dec.decode(value, { stream: true });
      out.raw += text;
      buf += text;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, i);
        buf = buf.slice(i + 2);
        assert.ok(frame.startsWith('data: '), `SSE frame must be a data line: ${JSON.stringify(frame)}`);
        const data = frame.slice(6);
        out.events.push(data === '[DONE]' ? 'DONE' : JSON.parse(data));
      }
      if (stopAfter?.(out.events)) {
        ac.abort();
        break;
      }
    }
  } catch (err) {
    out.readError = err;
  }
  return out;
}

const chunks = (events) => events.filter((e) => e && e.object === 'chat.completion.chunk');
const contentDeltas = (events) =>
  chunks(events).flatMap((e) => e.choices).map((c) => c.delta?.content).filter((c) => typeof c === 'string' && c !== '');
const finishReasons = (events) => chunks(events).flatMap((e) => e.choices).map((c) => c.finish_reason).filter(Boolean);

/** Reassemble tool calls from deltas; also report how many argument pieces each got. */
function toolCalls(events) {
  const calls = [];
  for (const e of chunks(events)) {
    for (const c of e.choices) {
      for (const tc of c.delta?.tool_calls ?? []) {
        const slot = (calls[tc.index] ??= { id: undefined, type: undefined, name: undefined, arguments: '', pieces: 0 });
        if (tc.id) slot.id = tc.id;
        if (tc.type) slot.type = tc.type;
        if (tc.function?.name) slot.name = tc.function.name;
        if (typeof tc.function?.arguments === 'string' && tc.function.arguments !== '') {
          slot.arguments += tc.function.arguments;
          slot.pieces++;
        }
      }
    }
  }
  return calls;
}

/** Asserts a well-formed complete stream: role chunk first, finish chunk, usage chunk, [DONE]. */
function assertComplete(r, finish) {
  assert.equal(r.status, 200);
  assert.equal(r.readError, null);
  const first = r.events[0];
  assert.equal(first.object, 'chat.completion.chunk');
  assert.equal(first.choices[0].delta.role, 'assistant');
  const n = r.events.length;
  assert.equal(r.events[n - 1], 'DONE');
  const usage = r.events[n - 2];
  assert.deepEqual(usage.choices, []);
  assert.equal(typeof usage.usage.prompt_tokens, 'number');
  assert.equal(usage.usage.total_tokens, usage.usage.prompt_tokens + usage.usage.completion_tokens);
  const fin = r.events[n - 3];
  assert.equal(fin.choices[0].finish_reason, finish);
  assert.deepEqual(fin.choices[0].delta, {});
  assert.deepEqual(finishReasons(r.events), [finish]);
  for (const e of chunks(r.events)) assert.equal(e.id, first.id);
}

test('echo reply is streamed word by word', async () => {
  const r = await complete({ messages: [{ role: 'system', content: 'sys' }, user('hello there  world')] });
  assert.match(r.headers.get('content-type'), /^text\/event-stream/);
  assertComplete(r, 'stop');
  assert.deepEqual(contentDeltas(r.events), ['You ', 'said: ', 'hello ', 'there  ', 'world']);
});

test('content as an array of text parts, last user message wins', async () => {
  const r = await complete({
    messages: [user('first'), { role: 'assistant', content: 'x' }, user([{ type: 'text', text: 'two ' }, { type: 'text', text: 'parts' }])],
  });
  assertComplete(r, 'stop');
  assert.equal(contentDeltas(r.events).join(''), 'You said: two parts');
});

test('[tokens:N] streams w1..wN one per delta', async () => {
  const r = await complete({ messages: [user('[tokens:5]')] });
  assertComplete(r, 'stop');
  assert.deepEqual(contentDeltas(r.events), ['w1 ', 'w2 ', 'w3 ', 'w4 ', 'w5']);
  assert.equal(r.events.at(-2).usage.completion_tokens, 5);
});

test('[delay:MS] waits between deltas', async () => {
  const t0 = Date.now();
  const r = await complete({ messages: [user('[tokens:4] [delay:60]')] });
  const elapsed = Date.now() - t0;
  assertComplete(r, 'stop');
  assert.equal(contentDeltas(r.events).length, 4);
  assert.ok(elapsed >= 4 * 60 - 20, `elapsed ${elapsed}ms`);
});

test('[delay:MS] also applies to tool-call pieces', async () => {
  const t0 = Date.now();
  const r = await complete({ messages: [user('[delay:50] [tool:x:{}]')] });
  assertComplete(r, 'tool_calls');
  assert.ok(Date.now() - t0 >= 2 * 50 - 15);
});

test('[http:NNN] answers that status with a JSON error', async () => {
  for (const status of [429, 500, 401]) {
    const r = await complete({ messages: [user(`boom [http:${status}]`)] });
    assert.equal(r.status, status);
    assert.deepEqual(r.json, { error: { message: `scripted error ${status}`, type: 'scripted' } });
  }
});

test('[http-once:NNN] fails the first request for a message, then answers it', async () => {
  const messages = [user('flaky [http-once:503] [retry-after-ms:1200]')];
  const first = await complete({ messages });
  assert.equal(first.status, 503);
  assert.equal(first.headers.get('retry-after-ms'), '1200');
  const second = await complete({ messages });
  assert.equal(second.status, 200);
  assert.deepEqual(contentDeltas(second.events).join(''), 'You said: flaky [http-once:503] [retry-after-ms:1200]');
});

test('[stream-error] sends two words then an error event and ends', async () => {
  const r = await complete({ messages: [user('please [stream-error]')] });
  assert.equal(r.status, 200);
  assert.equal(r.readError, null);
  assert.deepEqual(contentDeltas(r.events), ['You ', 'said: ']);
  assert.deepEqual(r.events.at(-1), { error: { message: 'scripted stream failure' } });
  assert.ok(!r.events.includes('DONE'));
  assert.deepEqual(finishReasons(r.events), []);
});

test('[truncate] sends two words then cuts the connection', async () => {
  const r = await complete({ messages: [user('[truncate] now')] });
  assert.equal(r.status, 200);
  assert.deepEqual(contentDeltas(r.events), ['You ', 'said: ']);
  assert.ok(!r.events.includes('DONE'));
  assert.deepEqual(finishReasons(r.events), []);
  assert.ok(r.readError, 'reading the body must fail (connection cut mid-body)');
});

test('[hang] keeps the stream open without finishing', async () => {
  const ac = new AbortController();
  const res = await fetch(`${srv.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ stream: true, messages: [user('[hang] forever and ever')] }),
    signal: ac.signal,
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  const deadline = Date.now() + 600;
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), 600); });
  while (Date.now() < deadline) {
    const r = await Promise.race([reader.read(), timeout]);
    if (r === 'timeout') break;
    if (r.done) assert.fail('a [hang] stream must not end');
    text += dec.decode(r.value, { stream: true });
  }
  clearTimeout(timer);
  ac.abort();
  const events = text.split('\n\n').filter(Boolean).map((f) => JSON.parse(f.slice(6)));
  assert.deepEqual(contentDeltas(events), ['You ', 'said: ', '[hang] ']);
  assert.deepEqual(finishReasons(events), []);
});

test('[hang] streams are ended by close()', async () => {
  const s = await startModelServer();
  const res = await fetch(`${s.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ stream: true, messages: [user('[hang]')] }),
  });
  const reader = res.body.getReader();
  await reader.read();
  const t0 = Date.now();
  await s.close();
  assert.ok(Date.now() - t0 < 1000);
  await assert.rejects(async () => { for (;;) { const r = await reader.read(); if (r.done) throw new Error('ended'); } });
});

test('[tool:NAME:JSON] calls that tool even when not offered, arguments in 2+ pieces', async () => {
  const r = await complete({ messages: [user('do it [tool:mystery_tool:{"a":[1,2],"b":{"c":"d"}}] please')] });
  assertComplete(r, 'tool_calls');
  assert.equal(r.events[0].choices[0].delta.content, null);
  const calls = toolCalls(r.events);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, 'mystery_tool');
  assert.equal(calls[0].type, 'function');
  assert.match(calls[0].id, /^call_\d+$/);
  assert.deepEqual(JSON.parse(calls[0].arguments), { a: [1, 2], b: { c: 'd' } });
  assert.ok(calls[0].pieces >= 2);
  assert.deepEqual(contentDeltas(r.events), []);
  // the first delta of a call carries index, id, type and function.name
  const firstToolChunk = chunks(r.events).find((e) => e.choices[0]?.delta?.tool_calls);
  const tc = firstToolChunk.choices[0].delta.tool_calls[0];
  assert.equal(tc.index, 0);
  assert.ok(tc.id && tc.type === 'function' && tc.function.name === 'mystery_tool');
});

test('[tool:NAME:{}] sends {} in two pieces', async () => {
  const r = await complete({ messages: [user('[tool:get_weather:{}]')], tools: [toolDef('get_weather')] });
  assertComplete(r, 'tool_calls');
  const [c] = toolCalls(r.events);
  assert.equal(c.arguments, '{}');
  assert.equal(c.pieces, 2);
});

test('[tools:A,B,C] makes parallel calls with unique ids across requests', async () => {
  const r1 = await complete({ messages: [user('[tools:alpha,beta,gamma]')] });
  const r2 = await complete({ messages: [user('[tools:alpha,beta]')] });
  assertComplete(r1, 'tool_calls');
  assertComplete(r2, 'tool_calls');
  const c1 = toolCalls(r1.events);
  const c2 = toolCalls(r2.events);
  assert.deepEqual(c1.map((c) => c.name), ['alpha', 'beta', 'gamma']);
  assert.deepEqual(c2.map((c) => c.name), ['alpha', 'beta']);
  for (const c of [...c1, ...c2]) {
    assert.equal(c.arguments, '{}');
    assert.match(c.id, /^call_\d+$/);
  }
  const ids = [...c1, ...c2].map((c) => c.id);
  assert.equal(new Set(ids).size, ids.length);
});

test('[tool-each:NAME:[…]] makes one call of NAME per array element, with that element as arguments', async () => {
  const text = 'go [tool-each:delegate:[{"agent":"kid-1","task":"\\u005bdelay:5] a"},{"agent":"kid-2","task":"b"}]] now';
  const r = await complete({ messages: [user(text)] });
  assertComplete(r, 'tool_calls');
  const calls = toolCalls(r.events);
  assert.deepEqual(calls.map((c) => c.name), ['delegate', 'delegate']);
  assert.deepEqual(calls.map((c) => JSON.parse(c.arguments)), [
    { agent: 'kid-1', task: '[delay:5] a' },
    { agent: 'kid-2', task: 'b' },
  ]);
  assert.equal(new Set(calls.map((c) => c.id)).size, 2);
});

test('tool results: "Tool results: name=content; ..." from the trailing tool messages', async () => {
  const messages = [
    user('weather in Paris and timezone'),
    {
      role: 'assistant', content: null,
      tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_b', type: 'function', function: { name: 'getUserTimezone', arguments: '{}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_a', content: '{"temp":21}' },
    { role: 'tool', tool_call_id: 'call_b', content: [{ type: 'text', text: 'Europe/Paris' }] },
    { role: 'tool', tool_call_id: 'call_unknown', content: 'x' },
  ];
  const r = await complete({ messages, tools: [toolDef('get_weather'), toolDef('getUserTimezone')] });
  assertComplete(r, 'stop');
  const deltas = contentDeltas(r.events);
  assert.equal(deltas.join(''), 'Tool results: get_weather={"temp":21}; getUserTimezone=Europe/Paris; call_unknown=x');
  assert.deepEqual(deltas.slice(0, 3), ['Tool ', 'results: ', 'get_weather={"temp":21}; ']);
});

test('tool results only count the trailing run of tool messages', async () => {
  const messages = [
    user('[tool:t1:{}]'),
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 't1', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'one' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c2', type: 'function', function: { name: 't2', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'c2', content: 'two' },
  ];
  const r = await complete({ messages });
  assert.equal(contentDeltas(r.events).join(''), 'Tool results: t2=two');
});

test('[loop-tools] calls get_weather {"city":"Loop"} every time, even after a tool result', async () => {
  const first = await complete({ messages: [user('[loop-tools]')] });
  assertComplete(first, 'tool_calls');
  const [c] = toolCalls(first.events);
  assert.equal(c.name, 'get_weather');
  assert.deepEqual(JSON.parse(c.arguments), { city: 'Loop' });
  const again = await complete({
    messages: [
      user('[loop-tools]'),
      { role: 'assistant', content: null, tool_calls: [{ id: c.id, type: 'function', function: { name: 'get_weather', arguments: c.arguments } }] },
      { role: 'tool', tool_call_id: c.id, content: 'sunny' },
    ],
  });
  assertComplete(again, 'tool_calls');
  const [c2] = toolCalls(again.events);
  assert.equal(c2.name, 'get_weather');
  assert.notEqual(c2.id, c.id);
});

test('weather in <City> calls get_weather when offered, echoes otherwise', async () => {
  const offered = await complete({ messages: [user("What's the Weather in New York?")], tools: [toolDef('get_weather')] });
  assertComplete(offered, 'tool_calls');
  const [c] = toolCalls(offered.events);
  assert.equal(c.name, 'get_weather');
  assert.deepEqual(JSON.parse(c.arguments), { city: 'New York' });
  assert.ok(c.pieces >= 2);

  const notOffered = await complete({ messages: [user('weather in Paris')], tools: [toolDef('other')] });
  assertComplete(notOffered, 'stop');
  assert.equal(contentDeltas(notOffered.events).join(''), 'You said: weather in Paris');
});

const plainRules = [
  ['what is my timezone?', 'getUserTimezone', {}],
  ['what screen size do I have', 'getScreenSize', {}],
  ['please delete /tmp/notes.txt now', 'delete_file', { path: '/tmp/notes.txt' }],
  ['what does the clock say', 'parent_clock', {}],
  ['make it fail', 'parent_fail', {}],
  ['delegate researcher: find facts about otters', 'delegate', { agent: 'researcher', task: 'find facts about otters' }],
];
for (const [text, name, args] of plainRules) {
  test(`"${text}" → ${name} when offered, echo when not`, async () => {
    const r = await complete({ messages: [user(text)], tools: [toolDef(name)] });
    assertComplete(r, 'tool_calls');
    const calls = toolCalls(r.events);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, name);
    assert.deepEqual(JSON.parse(calls[0].arguments), args);
    const echo = await complete({ messages: [user(text)] });
    assertComplete(echo, 'stop');
    assert.equal(contentDeltas(echo.events).join(''), `You said: ${text}`);
  });
}

test('a plain rule whose tool is not offered lets a later rule match', async () => {
  const r = await complete({ messages: [user('delegate scout: check the weather in Oslo')], tools: [toolDef('delegate')] });
  const [c] = toolCalls(r.events);
  assert.equal(c.name, 'delegate');
  assert.deepEqual(JSON.parse(c.arguments), { agent: 'scout', task: 'check the weather in Oslo' });
});

test('non-streaming requests get a chat.completion JSON', async () => {
  const r = await complete({ messages: [user('hi')] }, { stream: false });
  assert.equal(r.status, 200);
  assert.equal(r.json.object, 'chat.completion');
  assert.equal(r.json.choices[0].message.content, 'You said: hi');
  const t = await complete({ messages: [user('[tool:x:{"k":1}]')] }, { stream: false });
  assert.equal(t.json.choices[0].finish_reason, 'tool_calls');
  assert.equal(t.json.choices[0].message.tool_calls[0].function.arguments, '{"k":1}');
});

test('admin: requests are recorded, GET /__requests lists them, POST /__reset clears', async () => {
  const s = await startModelServer();
  try {
    const body = { model: 'm', stream: true, messages: [user('recorded')] };
    await (await fetch(`${s.url}/chat/completions`, { method: 'POST', body: JSON.stringify(body) })).text();
    assert.equal(s.requests.length, 1);
    assert.deepEqual(s.requests[0], body);
    const base = s.url.replace(/\/v1$/, '');
    assert.deepEqual(await (await fetch(`${base}/__requests`)).json(), [body]);
    assert.equal((await fetch(`${base}/__reset`, { method: 'POST' })).status, 204);
    assert.equal(s.requests.length, 0);
    assert.deepEqual(await (await fetch(`${base}/__requests`)).json(), []);
  } finally {
    await s.close();
  }
});

test('CLI prints its URL and serves', async () => {
  const script = fileURLToPath(new URL('./model-server.mjs', import.meta.url));
  const child = spawn(process.execPath, [script, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const line = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('\n')) resolve(out.split('\n')[0]);
      });
      child.on('exit', (code) => reject(new Error(`exited ${code}`)));
    });
    const m = /^model server listening on (http:\/\/127\.0\.0\.1:\d+\/v1)$/.exec(line);
    assert.ok(m, line);
    const res = await fetch(`${m[1]}/chat/completions`, { method: 'POST', body: JSON.stringify({ messages: [user('cli')] }) });
    assert.equal((await res.json()).choices[0].message.content, 'You said: cli');
  } finally {
    child.kill('SIGTERM');
  }
});

test('a continue instruction after a cut answer gets only the missing rest of the reply', () => {
  const continueText = 'Continue your previous response from exactly where it stopped. Do not repeat anything you already said.';
  const reply = planReply({
    messages: [
      { role: 'user', content: '[tokens:6]' },
      { role: 'assistant', content: 'w1 w2 w3 ' },
      { role: 'user', content: continueText },
    ],
  });
  assert.equal(reply.kind, 'text');
  assert.equal(reply.text, 'w4 w5 w6');
});

test('the prompt cache counts a shared start from 1,024 tokens on, in steps of 128', () => {
  const cache = new PromptCache();
  const base = 'x'.repeat(4096 + 4 * 300); // 1,324 tokens
  assert.deepEqual(cache.usageOf(base), { promptTokens: 1324, cachedTokens: 0 }, 'nothing seen yet');
  assert.deepEqual(cache.usageOf(`${base}more`), { promptTokens: 1325, cachedTokens: 1280 }, '1,324 shared: 1,024 + 2 × 128');
  assert.deepEqual(cache.usageOf(`y${base}`), { promptTokens: 1325, cachedTokens: 0 }, 'a changed first byte shares nothing');
  assert.deepEqual(cache.usageOf('x'.repeat(4000)), { promptTokens: 1000, cachedTokens: 0 }, 'under 1,024 tokens nothing is cached');
});

test('with promptCache the usage chunk reports the cached tokens as OpenAI does', async () => {
  const cached = await startModelServer({ promptCache: true });
  try {
    const long = 'lorem ipsum '.repeat(600);
    const ask = async (text) => {
      const res = await fetch(`${cached.url}/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', stream: false, messages: [user(long), user(text)] }),
      });
      return (await res.json()).usage;
    };
    const first = await ask('one');
    assert.equal(first.prompt_tokens_details.cached_tokens, 0);
    const second = await ask('two');
    assert.ok(second.prompt_tokens_details.cached_tokens >= 1024, JSON.stringify(second));
    assert.equal(cached.promptCache.records.length, 2);
  } finally {
    await cached.close();
  }
});

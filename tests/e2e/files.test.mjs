// End-to-end: files in user messages. The stock `useAgentChat` sends an image as a `file` part
// (`sendMessage({text, files})`), the agent stores it as sent and the scripted model server
// receives it as an OpenAI `image_url` content part after the text; a file over the size limit
// is refused with an error on its request and the stored transcript is unchanged.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatRequest, getMessages, isDone } from '../support/harness.mjs';
import { workerFor, tab, rid } from '../support/e2e.mjs';
import { mountAgentChat } from '../support/agent-chat-node.mjs';

const AGENT = 'ChatAgent';
const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

test('an image the stock client attaches reaches the model as an image_url part', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t);
  const room = 'files-image';
  const chat = await mountAgentChat({ url: w.url, name: room, hook: 'agents' });
  t.after(() => chat.unmount());
  await chat.chat.sendMessage({
    text: 'what is in this picture?',
    files: [{ type: 'file', mediaType: 'image/png', url: PNG, filename: 'dot.png' }],
  });
  await chat.waitFor((c) => c.status === 'ready' && c.messages.at(-1)?.role === 'assistant', 20000);
  const request = w.model.requests.at(-1);
  const user = request.messages.filter((m) => m.role === 'user').at(-1);
  assert.deepEqual(user.content, [
    { type: 'text', text: 'what is in this picture?' },
    { type: 'image_url', image_url: { url: PNG } },
  ]);
  const stored = await getMessages(w.url, AGENT, room);
  const file = stored[0].parts.find((p) => p.type === 'file');
  assert.deepEqual(file, { type: 'file', mediaType: 'image/png', url: PNG, filename: 'dot.png' }, 'stored as sent');
});

test('a file over the size limit is refused on its request and nothing stored changes', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t);
  const room = 'files-too-large';
  const a = await tab(w, room);
  const r1 = rid();
  a.send(chatRequest(r1, [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hello' }] }]));
  assert.equal((await a.waitFor(isDone(r1), 20000)).outcome, 'completed');
  const before = await getMessages(w.url, AGENT, room);
  const big = `data:application/pdf;base64,${'A'.repeat(1024 * 1024)}`;
  const r2 = rid();
  a.send(chatRequest(r2, [{ id: 'u2', role: 'user', parts: [
    { type: 'text', text: 'read this' },
    { type: 'file', mediaType: 'application/pdf', url: big, filename: 'big.pdf' },
  ] }]));
  const refusal = await a.waitFor(isDone(r2), 20000);
  assert.equal(refusal.error, true);
  assert.match(refusal.body, /a file in message u2 is too large: 1048604 bytes \(limit 1048576\)/);
  assert.deepEqual(await getMessages(w.url, AGENT, room), before, 'nothing stored changed');
  assert.equal(a.isOpen, true, 'the socket stays open');
  await a.close();
});

const userWithFile = (id, text, file) => ({ id, role: 'user', parts: [{ type: 'text', text }, { type: 'file', filename: 'f', ...file }] });

test('a malformed or mistyped data: URL is refused at admission, so it cannot fail later requests', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t);
  const room = 'files-bad-data';
  const a = await tab(w, room);
  const rows = [
    { mediaType: 'image/png', url: 'data:image/png;base64,not*base64', why: /malformed data: URL/ },
    { mediaType: 'image/png', url: 'data:text/html;base64,PGgxPmhpPC9oMT4=', why: /media type is not the part's mediaType/ },
    { mediaType: 'text/plain', url: 'file:///etc/passwd', why: /neither a data: URL nor an http\(s\) link/ },
  ];
  for (const row of rows) {
    const id = rid();
    const before = w.model.requests.length;
    a.send(chatRequest(id, [userWithFile(rid('u'), 'look', { mediaType: row.mediaType, url: row.url })]));
    const refusal = await a.waitFor(isDone(id), 20000);
    assert.equal(refusal.error, true, row.url);
    assert.match(refusal.body, row.why);
    assert.ok(!refusal.body.includes(row.url), 'the url is not echoed');
    assert.equal(w.model.requests.length, before, 'the model was not called');
  }
  assert.deepEqual(await getMessages(w.url, AGENT, room), [], 'nothing stored');
  const next = rid();
  a.send(chatRequest(next, [{ id: rid('u'), role: 'user', parts: [{ type: 'text', text: 'still fine?' }] }]));
  assert.equal((await a.waitFor(isDone(next), 20000)).outcome, 'completed', 'later requests are unaffected');
  assert.equal(a.isOpen, true);
});

test('a file given by a link reaches the model as a text note unless its host is allowed', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t, { bindings: { FILE_LINK_HOSTS: 'cdn.example.com' } });
  const room = 'files-links';
  const a = await tab(w, room);
  const id = rid();
  a.send(chatRequest(id, [{ id: rid('u'), role: 'user', parts: [
    { type: 'text', text: 'what are these?' },
    { type: 'file', mediaType: 'image/jpeg', url: 'http://169.254.169.254/latest/meta-data/x.jpg', filename: 'meta.jpg' },
    { type: 'file', mediaType: 'image/jpeg', url: 'https://cdn.example.com/cat.jpg', filename: 'cat.jpg' },
  ] }]));
  assert.equal((await a.waitFor(isDone(id), 20000)).outcome, 'completed');
  const user = w.model.requests.at(-1).messages.filter((m) => m.role === 'user').at(-1);
  const images = user.content.filter((p) => p.type === 'image_url').map((p) => p.image_url.url);
  assert.deepEqual(images, ['https://cdn.example.com/cat.jpg'], 'only the allowed host is fetched by the provider');
  const notes = user.content.filter((p) => p.type === 'text').map((p) => p.text).join('\n');
  assert.match(notes, /\[Attached file meta\.jpg \(image\/jpeg\): http:\/\/169\.254\.169\.254\/latest\/meta-data\/x\.jpg\]/);
  const stored = await getMessages(w.url, AGENT, room);
  assert.equal(stored[0].parts.filter((p) => p.type === 'file').length, 2, 'stored as sent');
});

// End-to-end: the demo's chat directory (`ChatDirectory`, one per user) through the stock `agents`
// client (`AgentClient`, the class under `useAgent`) on the real runtime. Its callables create,
// list, rename and delete the user's chats, each a `ChatAgent` named `<user>~<chat id>`; a chat's
// turn tells its directory over Durable Object RPC (last activity, and its first message as the
// title of a chat nobody named); deleting a chat erases it (its `destroy()` over Durable Object RPC)
// and every tab of the directory sees the list without it. The directory's own chat is refused.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import WS from 'ws';
import { AgentClient } from 'agents/client';
import { chatRequest, getMessages, isResponse, sendAndWait, userMessage } from '../support/harness.mjs';
import { workerFor, tab, rid, waitUntil } from '../support/e2e.mjs';

/** A stock client on the directory of `user`, ready, closed when `t` ends. */
async function directory(t, w, user) {
  const states = [];
  const c = new AgentClient({
    agent: 'ChatDirectory',
    name: user,
    host: new URL(w.url).host,
    WebSocket: WS,
    onStateUpdate: (state) => states.push(state),
  });
  t.after(() => c.close());
  await c.ready;
  return { c, states };
}

const titles = (chats) => chats.map((c) => c.title).sort();
const textOf = (message) => message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

test('a directory creates, lists, renames and deletes its chats; a turn updates the list', { timeout: 60000 }, async (t) => {
  const w = await workerFor(t);
  const user = rid('user');
  const { c: dir, states } = await directory(t, w, user);
  const other = await directory(t, w, user);
  assert.deepEqual(await dir.call('listChats', []), []);
  assert.deepEqual(dir.state, { chats: [] });

  const first = await dir.call('createChat', []);
  const second = await dir.stub.createChat('Trip planning');
  assert.equal(first.title, 'New chat');
  assert.equal(second.title, 'Trip planning');
  for (const chat of [first, second]) {
    assert.equal(chat.agent, `${user}~${chat.id}`);
    assert.equal(typeof chat.createdAt, 'number');
  }
  assert.notEqual(first.id, second.id);
  assert.deepEqual(titles(await dir.call('listChats', [])), ['New chat', 'Trip planning']);
  await waitUntil(() => other.c.state?.chats?.length === 2, { what: "the other tab's list" });

  // Each chat is its own conversation; its turn reaches the directory.
  const a = await tab(w, first.agent);
  await sendAndWait(a, rid(), [userMessage(rid(), 'pack   the\ntent')], {}, 15000);
  const b = await tab(w, second.agent);
  await sendAndWait(b, rid(), [userMessage(rid(), 'book a train')], {}, 15000);
  const listed = await waitUntil(async () => {
    const chats = await dir.call('listChats', []);
    const named = chats.find((c) => c.id === first.id);
    const trip = chats.find((c) => c.id === second.id);
    return named.title !== 'New chat' && trip.lastActivity > second.createdAt ? chats : null;
  }, { what: 'both turns reported', timeoutMs: 15000, intervalMs: 100 });
  assert.equal(listed.find((c) => c.id === first.id).title, 'pack the tent', "an unnamed chat takes its first message's text");
  assert.equal(listed.find((c) => c.id === second.id).title, 'Trip planning', "the user's title stays");
  assert.equal(listed[0].id, second.id, 'the latest activity first');
  assert.deepEqual((await getMessages(w.url, 'ChatAgent', first.agent)).map(textOf), ['pack   the\ntent', 'You said: pack   the\ntent']);
  assert.equal(textOf((await getMessages(w.url, 'ChatAgent', second.agent))[0]), 'book a train');

  const renamed = await dir.call('renameChat', [first.id, '  Camping  ']);
  assert.equal(renamed.title, 'Camping');
  await assert.rejects(dir.call('renameChat', [first.id, '   ']), /title may not be empty/);
  await assert.rejects(dir.call('renameChat', ['nope', 'x']), /no such chat/);
  await assert.rejects(dir.call('renameChat', [first.id]), /Invalid arguments for method renameChat/);
  await sendAndWait(a, rid(), [userMessage(rid(), 'and a stove')], {}, 15000);
  await waitUntil(async () => (await dir.call('listChats', []))[0].id === first.id, { what: 'the new activity', timeoutMs: 15000, intervalMs: 100 });
  assert.equal((await dir.call('listChats', [])).find((c) => c.id === first.id).title, 'Camping', 'a renamed chat keeps its name');

  // A tab may not write the list as state, nor report activity (an RPC method only).
  dir.setState({ chats: [] });
  await assert.rejects(dir.call('recordChatActivity', [second.id, 'forged']), /Connection is readonly|does not exist/);
  assert.equal((await dir.call('listChats', [])).length, 2);

  const left = await dir.call('deleteChat', [first.id]);
  assert.deepEqual(left.map((c) => c.id), [second.id]);
  assert.deepEqual(await a.waitForClose(), { code: 4410, reason: 'agent destroyed' }, "the chat's own tab is closed");
  // Until the erased object is reset (right after the call) a request is answered 503 "try again".
  const erased = await waitUntil(() => getMessages(w.url, 'ChatAgent', first.agent).catch(() => null), { what: 'the erased chat', intervalMs: 50 });
  assert.deepEqual(erased, [], 'the deleted chat is erased');
  assert.equal((await getMessages(w.url, 'ChatAgent', second.agent)).length, 2, 'the other chat is untouched');
  await waitUntil(() => other.c.state?.chats?.length === 1, { what: "the other tab's list without it" });
  assert.deepEqual(other.c.state.chats.map((c) => c.id), [second.id]);
  await assert.rejects(dir.call('deleteChat', [first.id]), /no such chat/);
  assert.ok(states.length >= 4, 'the tab saw every change as state');

  // Another user's directory is another list.
  const { c: stranger } = await directory(t, w, rid('user'));

  // The directory's own chat is not for use: no model call is made on it.
  const raw = await tab(w, user, {}, 'ChatDirectory');
  const refusedId = rid();
  raw.send(chatRequest(refusedId, [userMessage(rid(), 'chat with the directory')]));
  const refused = await raw.waitFor(isResponse(refusedId));
  assert.equal(refused.error, true);
  assert.match(refused.body, /Connection is readonly/);
  await raw.close();
  assert.deepEqual(await stranger.call('listChats', []), []);
  await assert.rejects(stranger.call('deleteChat', [second.id]), /no such chat/);
});

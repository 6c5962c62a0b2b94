// A chat client with no React: turns with a durable-chat agent from plain JavaScript, in a
// browser or in Node >= 22 (which has a global WebSocket). `AgentClient` (agents/client) opens the
// agent's socket at the URL `useAgent` would; `MessageType` and `applyChunkToParts` (agents/chat)
// name the frames and fold the streamed chunks into the answer's parts. The frames are described
// in docs/guides/wire-protocol.md.
//
//   npm install agents
//   node chat.mjs 127.0.0.1:8787 starter-agent my-conversation 'hello'
import { AgentClient } from 'agents/client';
import { MessageType, applyChunkToParts } from 'agents/chat';
import { pathToFileURL } from 'node:url';

/**
 * Opens conversation `name` of `agent` (its kebab-case name, e.g. `starter-agent`) at `host`
 * (`127.0.0.1:8787`; http/ws for local hosts, https/wss otherwise). Resolves once the agent has
 * sent the stored transcript, with the client and that transcript (`UIMessage[]`).
 */
export function openChat({ host, agent, name, query }) {
  const client = new AgentClient({ host, agent, name, query });
  return new Promise((resolve, reject) => {
    const onMessage = (event) => {
      const frame = JSON.parse(event.data);
      if (frame.type !== MessageType.CF_AGENT_CHAT_MESSAGES) return;
      client.removeEventListener('message', onMessage);
      resolve({ client, messages: frame.messages });
    };
    client.addEventListener('message', onMessage);
    client.addEventListener('error', () => reject(new Error(`cannot connect to ${host}`)), { once: true });
  });
}

/**
 * Sends `text` as the next user message after `messages` and follows the turn to its end.
 * Resolves with `{ outcome, message, error }`: the terminal frame's outcome (`completed`, `error`,
 * `aborted`, …), the assistant message built from the streamed chunks, and the error text if any.
 */
export function sendMessage(client, messages, text) {
  const id = crypto.randomUUID().slice(0, 8);
  const user = { id: `u-${id}`, role: 'user', parts: [{ type: 'text', text }] };
  const message = { id: `a-${id}`, role: 'assistant', parts: [] };
  let error = null;
  return new Promise((resolve) => {
    const onMessage = (event) => {
      const frame = JSON.parse(event.data);
      if (frame.type !== MessageType.CF_AGENT_USE_CHAT_RESPONSE || frame.id !== id) return;
      if (frame.error) error = frame.body || error;
      else if (frame.body) applyChunkToParts(message.parts, JSON.parse(frame.body));
      if (!frame.done) return;
      client.removeEventListener('message', onMessage);
      resolve({ outcome: frame.outcome ?? (error ? 'error' : 'completed'), message, error });
    };
    client.addEventListener('message', onMessage);
    client.send(JSON.stringify({
      type: MessageType.CF_AGENT_USE_CHAT_REQUEST,
      id,
      init: { method: 'POST', body: JSON.stringify({ messages: [...messages, user], trigger: 'submit-message' }) },
    }));
  });
}

/** The text parts of a message, joined. */
export const textOf = (message) => message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

// From the command line: one turn, then the answer's text and tool parts.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [host, agent, name, text] = process.argv.slice(2);
  const { client, messages } = await openChat({ host, agent, name });
  const { outcome, message, error } = await sendMessage(client, messages, text);
  for (const part of message.parts.filter((p) => p.type.startsWith('tool-'))) {
    console.log(`${part.type}: ${JSON.stringify(part.input)} → ${JSON.stringify(part.output ?? part.errorText)}`);
  }
  console.log(textOf(message));
  if (error) console.error(error);
  client.close();
  process.exit(outcome === 'completed' ? 0 : 1);
}

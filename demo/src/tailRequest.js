// Sends only what the server has not stored. The agent keeps the conversation itself, so a chat
// request needs just its newest message: the new user message of a submit, or for a regenerate
// the message the answer is regenerated from (the server drops what came after it). Requests stay
// small however long the conversation gets (a WebSocket message to a Worker is at most 1 MiB).
// useAgentChat merges the returned `body` over its request, `messages` included.
export function sendOnlyTheTail({ messages }) {
  return { body: { messages: messages.slice(-1) } };
}

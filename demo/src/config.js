// Page settings read once from the URL and the HTML shell.

const params = new URLSearchParams(window.location.search);

/** Agent instance name: `?name=` (default "demo"). Two tabs with the same name share one chat. */
export const agentName = params.get('name') || 'demo';

/**
 * `?user=`: the page shows that user's chat directory (a sidebar of chats, each its own `ChatAgent`)
 * instead of the one chat `?name=` picks; `?chat=` is the chat shown first.
 */
export const user = params.get('user');
export const initialChat = params.get('chat');

/** Optional `?token=`: passed through to the agent as a query parameter (socket and HTTP). */
export const token = params.get('token');

/** Crate version stamped into the page by build.rs. */
export const version = document.querySelector('meta[name="app-version"]')?.content ?? '';

/** Prompts the bundled scripted model understands (each shows off one feature). */
export const suggestions = [
  "What's the weather in Paris?",
  "What's my timezone?",
  "What's my screen size?",
  'Delete notes.txt',
];

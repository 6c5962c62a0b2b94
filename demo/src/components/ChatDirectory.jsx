import { useCallback, useState } from 'react';
import { useAgent } from 'agents/react';
import { ChatSession } from './ChatSession.jsx';
import { initialChat } from '../config.js';

/** "3 min ago" for a time in ms since the epoch. */
function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

/** Keeps the shown chat in the address (`?chat=`), so a reload opens it again. */
function remember(chatId) {
  const url = new URL(window.location.href);
  if (chatId) url.searchParams.set('chat', chatId);
  else url.searchParams.delete('chat');
  window.history.replaceState(null, '', url);
}

/**
 * The user's chat directory (the `ChatDirectory` agent named after the user): a sidebar of their
 * chats (its synced state), new / rename / delete through its callables, and the chosen chat
 * beside it. Switching mounts a new ChatSession, so useAgentChat connects to that chat's agent.
 */
export function ChatDirectory({ user, query }) {
  const [chats, setChats] = useState([]);
  const [selected, setSelected] = useState(initialChat);
  const [editing, setEditing] = useState(null);
  const [draft, setDraft] = useState('');
  const [error, setError] = useState(null);
  const directory = useAgent({
    agent: 'ChatDirectory',
    name: user,
    query,
    onStateUpdate: (state) => setChats(Array.isArray(state?.chats) ? state.chats : []),
  });

  const select = useCallback((id) => {
    setSelected(id);
    remember(id);
  }, []);

  /** Runs one directory call; its refusal is shown above the list. */
  const run = useCallback(async (method, args) => {
    setError(null);
    try {
      return await directory.call(method, args);
    } catch (e) {
      setError(e?.message ?? String(e));
      return null;
    }
  }, [directory]);

  const create = async () => {
    const chat = await run('createChat', []);
    if (chat) select(chat.id);
  };
  const rename = async (event, id) => {
    event.preventDefault();
    if (await run('renameChat', [id, draft])) setEditing(null);
  };
  const remove = async (id) => {
    if (await run('deleteChat', [id]) && id === selected) select(null);
  };

  const current = chats.find((c) => c.id === selected) ?? chats[0];

  return (
    <div className="workspace">
      <nav className="chat-list" data-testid="chat-list" aria-label="Chats">
        <div className="chat-list-head">
          <span className="chat-list-user" data-testid="user">{user}</span>
          <button type="button" data-testid="new-chat" onClick={create}>+ New chat</button>
        </div>
        {error && <p className="chat-list-error" role="alert" data-testid="chat-list-error">{error}</p>}
        <ul>
          {chats.map((chat) => (
            <li
              key={chat.id}
              data-testid="chat-item"
              data-chat-id={chat.id}
              className={chat.id === current?.id ? 'selected' : undefined}
              aria-current={chat.id === current?.id ? 'page' : undefined}
            >
              {editing === chat.id ? (
                <form onSubmit={(e) => rename(e, chat.id)}>
                  <input
                    aria-label="Chat title"
                    data-testid="rename-input"
                    value={draft}
                    autoFocus
                    onChange={(e) => setDraft(e.target.value)}
                    onKeyDown={(e) => e.key === 'Escape' && setEditing(null)}
                  />
                </form>
              ) : (
                <button type="button" className="chat-title" data-testid="chat-title" onClick={() => select(chat.id)}>
                  <span>{chat.title}</span>
                  <small data-testid="chat-activity">{ago(chat.lastActivity)}</small>
                </button>
              )}
              <button
                type="button"
                className="chat-action"
                data-testid="rename-chat"
                aria-label={`Rename ${chat.title}`}
                onClick={() => { setEditing(chat.id); setDraft(chat.title); }}
              >✎</button>
              <button
                type="button"
                className="chat-action"
                data-testid="delete-chat"
                aria-label={`Delete ${chat.title}`}
                onClick={() => remove(chat.id)}
              >×</button>
            </li>
          ))}
        </ul>
      </nav>
      {current ? (
        <ChatSession key={current.agent} name={current.agent} query={query} />
      ) : (
        <p className="no-chat" data-testid="no-chat">No chat yet: start one with “New chat”.</p>
      )}
    </div>
  );
}

import { useEffect, useRef } from 'react';
import { Message, isVisiblePart } from './Message.jsx';

/** The transcript, kept scrolled to the bottom while the user has not scrolled up. */
export function MessageList({ messages: all, busy, suggestions, onSuggestion, onApproval }) {
  // Messages with nothing to show (an assistant turn that failed before its first token) are left out.
  const messages = all.filter((m) => (m.parts ?? []).some(isVisiblePart));
  const scroller = useRef(null);
  const pinned = useRef(true);

  const onScroll = () => {
    const el = scroller.current;
    pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
  };

  useEffect(() => {
    const el = scroller.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, [all]);

  return (
    <div className="messages" ref={scroller} onScroll={onScroll} data-testid="messages" aria-label="Conversation">
      {all.length === 0 ? (
        <div className="empty" data-testid="empty">
          <h2>Chat with a Durable Object</h2>
          <p>
            The conversation lives in the agent, so it survives reloads, and every tab on the same
            name sees it live. Try one of these:
          </p>
          <ul className="suggestions">
            {suggestions.map((s) => (
              <li key={s}>
                <button type="button" className="chip" disabled={busy} onClick={() => onSuggestion(s)}>
                  {s}
                </button>
              </li>
            ))}
          </ul>
        </div>
      ) : (
        <ol className="message-list">
          {messages.map((m, i) => (
            <Message
              key={m.id}
              message={m}
              continued={i > 0 && messages[i - 1].role === m.role}
              onApproval={onApproval}
            />
          ))}
        </ol>
      )}
    </div>
  );
}

import { useState } from 'react';

/** Message box: Enter sends, Shift+Enter inserts a newline. Stop while streaming; Clear. */
export function Composer({ busy, disabled, canClear, onSend, onStop, onClear }) {
  const [text, setText] = useState('');
  const canSend = !busy && !disabled && text.trim() !== '';

  const submit = (event) => {
    event?.preventDefault();
    if (!canSend) return;
    onSend(text.trim());
    setText('');
  };

  const onKeyDown = (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      submit();
    }
  };

  return (
    <form className="composer" onSubmit={submit} data-testid="composer">
      <label htmlFor="message" className="visually-hidden">Message</label>
      <textarea
        id="message"
        data-testid="input"
        rows={2}
        value={text}
        placeholder="Ask something… (Enter sends, Shift+Enter for a new line)"
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKeyDown}
      />
      <div className="composer-actions">
        {busy ? (
          <button type="button" className="button danger" data-testid="stop" onClick={() => onStop()}>
            Stop
          </button>
        ) : (
          <button type="submit" className="button primary" data-testid="send" disabled={!canSend}>
            Send
          </button>
        )}
        <button type="button" className="button ghost" data-testid="clear" onClick={onClear} disabled={!canClear}>
          Clear
        </button>
      </div>
    </form>
  );
}

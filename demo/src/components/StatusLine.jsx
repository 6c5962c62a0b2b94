/** One line telling what the agent is doing; "Recovering…" when a durable turn is being resumed. */
export function StatusLine({ connection, status, isStreaming, isRecovering, isToolContinuation }) {
  let state = 'ready';
  let label = 'Ready';
  if (isRecovering) {
    state = 'recovering';
    label = 'Recovering… the turn was interrupted and is being resumed';
  } else if (connection === 'connecting') {
    state = 'connecting';
    label = 'Connecting…';
  } else if (connection === 'reconnecting') {
    state = 'reconnecting';
    label = 'Reconnecting…';
  } else if (status === 'submitted') {
    state = 'thinking';
    label = 'Thinking…';
  } else if (isToolContinuation) {
    state = 'continuing';
    label = 'Continuing after the tool result…';
  } else if (isStreaming) {
    state = 'streaming';
    label = 'Streaming…';
  }
  const active = state !== 'ready';
  return (
    <div className={`status status-${state}`} data-testid="status" data-state={state} role="status" aria-live="polite">
      {active && <span className="spinner" aria-hidden="true" />}
      {isRecovering ? <span data-testid="recovering">{label}</span> : label}
    </div>
  );
}

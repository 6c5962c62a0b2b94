const LABELS = {
  connecting: 'Connecting…',
  open: 'Connected',
  reconnecting: 'Reconnecting…',
};

export function ConnectionBadge({ state }) {
  return (
    <span className={`badge connection connection-${state}`} data-testid="connection" data-state={state}>
      <span className="dot" aria-hidden="true" />
      {LABELS[state] ?? state}
    </span>
  );
}

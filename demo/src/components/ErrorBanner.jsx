/** A readable error: plain text (never HTML), dismissible. */
export function ErrorBanner({ message, onDismiss }) {
  return (
    <div className="error-banner" role="alert" data-testid="error">
      <span className="error-icon" aria-hidden="true">!</span>
      <div className="error-body">
        <strong>Something went wrong</strong>
        <p data-testid="error-message">{message}</p>
      </div>
      <button type="button" className="icon-button" onClick={onDismiss} aria-label="Dismiss error">
        ×
      </button>
    </div>
  );
}

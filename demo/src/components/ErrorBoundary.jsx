import { Component } from 'react';

/** Shows a render-time failure as text instead of a blank page. */
export class ErrorBoundary extends Component {
  state = { error: null };

  static getDerivedStateFromError(error) {
    return { error };
  }

  render() {
    const { error } = this.state;
    if (!error) return this.props.children;
    return (
      <div className="error-banner" role="alert" data-testid="fatal-error">
        <strong>The page failed to render.</strong>
        <pre>{error instanceof Error ? error.message : String(error)}</pre>
        <button type="button" onClick={() => window.location.reload()}>Reload</button>
      </div>
    );
  }
}

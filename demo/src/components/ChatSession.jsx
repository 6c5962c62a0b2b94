import { Suspense, useState } from 'react';
import { useAgent } from 'agents/react';
import { version } from '../config.js';
import { Chat } from './Chat.jsx';
import { ErrorBoundary } from './ErrorBoundary.jsx';
import { ConnectionBadge } from './ConnectionBadge.jsx';
import { AgentState } from './AgentState.jsx';

/** One chat agent's page: its socket (useAgent), its state and its conversation. */
export function ChatSession({ name, query }) {
  // 'connecting' → 'open' ⇄ 'reconnecting'
  const [connection, setConnection] = useState('connecting');
  const agent = useAgent({
    agent: 'ChatAgent',
    name,
    query,
    onOpen: () => setConnection('open'),
    onClose: () => setConnection('reconnecting'),
  });

  return (
    <div className="app">
      <header className="app-header">
        <div className="brand">
          <span className="logo" aria-hidden="true">◆</span>
          <h1>durable-chat</h1>
          {version && <span className="version" data-testid="version">v{version}</span>}
        </div>
        <div className="header-meta">
          <span className="agent-name" title="Agent instance (set with ?name=)">
            ChatAgent / <strong data-testid="agent-name">{name}</strong>
          </span>
          <ConnectionBadge state={connection} />
        </div>
      </header>
      <AgentState agent={agent} />
      <ErrorBoundary>
        <Suspense fallback={<p className="loading" data-testid="loading">Loading conversation…</p>}>
          <Chat agent={agent} connection={connection} />
        </Suspense>
      </ErrorBoundary>
    </div>
  );
}

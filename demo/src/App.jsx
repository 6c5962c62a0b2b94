import { Suspense, useState } from 'react';
import { useAgent } from 'agents/react';
import { agentName, token, version } from './config.js';
import { Chat } from './components/Chat.jsx';
import { ErrorBoundary } from './components/ErrorBoundary.jsx';
import { ConnectionBadge } from './components/ConnectionBadge.jsx';
import { AgentState } from './components/AgentState.jsx';

const query = token ? { token } : undefined;

export function App() {
  // 'connecting' → 'open' ⇄ 'reconnecting'
  const [connection, setConnection] = useState('connecting');
  const agent = useAgent({
    agent: 'ChatAgent',
    name: agentName,
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
            ChatAgent / <strong data-testid="agent-name">{agentName}</strong>
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

import { useCallback, useState } from 'react';
import { useAgentChat } from 'agents/chat/react';
import { sendOnlyTheTail } from '../tailRequest.js';
import { clientTools, runClientTool } from '../clientTools.js';
import { suggestions } from '../config.js';
import { Composer } from './Composer.jsx';
import { ErrorBanner } from './ErrorBanner.jsx';
import { MessageList } from './MessageList.jsx';
import { StatusLine } from './StatusLine.jsx';

/** The conversation: useAgentChat over the socket that App's useAgent opened. */
export function Chat({ agent, connection }) {
  // Errors of turns this tab did not start (another tab's, or one replayed after a reload) reach
  // the page only through onTurnEnd; the hook's `error` covers this tab's own requests.
  const [turnError, setTurnError] = useState(null);
  const onTurnEnd = useCallback((event) => {
    if (event.outcome === 'error') setTurnError(event.error || 'The turn ended with an error.');
  }, []);

  const chat = useAgentChat({
    agent,
    tools: clientTools, // schemas go to the server because every entry has `execute`
    onToolCall: runClientTool, // …and the browser runs them here
    onTurnEnd,
    prepareSendMessagesRequest: sendOnlyTheTail, // the server keeps the history
  });
  const {
    messages, sendMessage, status, error, clearError, stop, clearHistory,
    addToolApprovalResponse, isStreaming, isRecovering, isToolContinuation, connectionError,
  } = chat;

  const busy = status === 'submitted' || isStreaming;

  const send = useCallback((text) => {
    clearError?.();
    setTurnError(null);
    sendMessage({ text });
  }, [sendMessage, clearError]);

  const clear = useCallback(() => {
    clearError?.();
    setTurnError(null);
    clearHistory();
  }, [clearError, clearHistory]);

  const respondToApproval = useCallback(
    (approvalId, approved) => addToolApprovalResponse({ id: approvalId, approved }),
    [addToolApprovalResponse],
  );

  const errorText = connectionError
    ? `Connection lost: ${connectionError.message || 'the agent closed the connection'}`
    : error
      ? error.message || String(error)
      : turnError;

  return (
    <main className="chat">
      <MessageList
        messages={messages}
        busy={busy}
        suggestions={suggestions}
        onSuggestion={send}
        onApproval={respondToApproval}
      />
      <div className="chat-footer">
        {errorText && (
          <ErrorBanner
            message={errorText}
            onDismiss={() => { clearError?.(); setTurnError(null); }}
          />
        )}
        <StatusLine
          connection={connection}
          status={status}
          isStreaming={isStreaming}
          isRecovering={isRecovering}
          isToolContinuation={isToolContinuation}
        />
        <Composer
          busy={busy}
          disabled={connection !== 'open'}
          canClear={messages.length > 0}
          onSend={send}
          onStop={stop}
          onClear={clear}
        />
      </div>
    </main>
  );
}

import { useState } from 'react';
import { getToolName } from 'ai';
import { isClientTool } from '../clientTools.js';

const STATE_LABELS = {
  'input-streaming': 'preparing',
  'input-available': 'running',
  'approval-requested': 'needs approval',
  'approval-responded': 'answered',
  'output-available': 'done',
  'output-error': 'error',
  'output-denied': 'denied',
};

/** A value as text: strings as they are, small JSON on one line, larger JSON indented. */
const show = (value) => {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  try {
    const oneLine = JSON.stringify(value);
    return oneLine.length <= 60 ? oneLine : JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
};

/** A tool call: name, where it runs, state, input and output (as text), and the approval prompt. */
export function ToolCall({ part, onApproval }) {
  const name = getToolName(part);
  const { state, input, output, errorText, approval } = part;
  const where = isClientTool(name) ? 'browser' : 'server';
  let label = STATE_LABELS[state] ?? state;
  if (state === 'approval-responded') label = approval?.approved ? 'approved' : 'denied';
  if (state === 'input-available' && where === 'browser') label = 'running in your browser';

  return (
    <div
      className={`tool tool-${state}`}
      data-testid="tool-call"
      data-tool-name={name}
      data-state={state}
      data-tool-call-id={part.toolCallId}
    >
      <div className="tool-header">
        <span className="tool-icon" aria-hidden="true">{where === 'browser' ? '⌨' : '⚙'}</span>
        <code className="tool-name" data-testid="tool-name">{name}</code>
        <span className="tool-where">{where} tool</span>
        <span className={`badge tool-state state-${state}`} data-testid="tool-state">{label}</span>
      </div>
      <dl className="tool-io">
        {input !== undefined && (
          <>
            <dt>Input</dt>
            <dd><pre data-testid="tool-input">{show(input)}</pre></dd>
          </>
        )}
        {state === 'output-available' && (
          <>
            <dt>Output</dt>
            <dd><pre data-testid="tool-output">{show(output)}</pre></dd>
          </>
        )}
        {state === 'output-error' && (
          <>
            <dt>Error</dt>
            <dd><pre className="tool-error" data-testid="tool-error">{show(errorText)}</pre></dd>
          </>
        )}
        {state === 'output-denied' && (
          <>
            <dt>Result</dt>
            <dd><pre data-testid="tool-output">Denied{approval?.reason ? `: ${approval.reason}` : ''}</pre></dd>
          </>
        )}
      </dl>
      {state === 'approval-requested' && approval && (
        <ApprovalPrompt name={name} approvalId={approval.id} onApproval={onApproval} />
      )}
    </div>
  );
}

function ApprovalPrompt({ name, approvalId, onApproval }) {
  const [answered, setAnswered] = useState(false);
  const answer = (approved) => {
    setAnswered(true);
    onApproval(approvalId, approved);
  };
  return (
    <div className="approval" role="group" aria-label={`Approve ${name}?`} data-testid="approval">
      <p>The agent wants to run <code>{name}</code>. Allow it?</p>
      <div className="approval-actions">
        <button type="button" className="button primary" data-testid="approve" disabled={answered} onClick={() => answer(true)}>
          Approve
        </button>
        <button type="button" className="button danger-outline" data-testid="deny" disabled={answered} onClick={() => answer(false)}>
          Deny
        </button>
      </div>
    </div>
  );
}

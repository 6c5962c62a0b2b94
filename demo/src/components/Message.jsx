import { isToolUIPart } from 'ai';
import { ToolCall } from './ToolCall.jsx';

const ROLE_LABELS = { user: 'You', assistant: 'Agent', system: 'System' };

/** Whether a part renders anything (an assistant message can start with only `step-start`). */
export const isVisiblePart = (part) =>
  ((part.type === 'text' || part.type === 'reasoning') && Boolean(part.text)) || isToolUIPart(part);

/**
 * One transcript message. All content is rendered as text. `continued`: the previous message has
 * the same role (e.g. the reply that follows a tool result), so the avatar is not repeated.
 */
export function Message({ message, continued, onApproval }) {
  const { role, parts = [] } = message;
  const className = `message message-${role}${continued ? ' message-continued' : ''}`;
  return (
    <li className={className} data-testid="message" data-role={role} data-id={message.id}>
      <div className="avatar" aria-hidden="true">{role === 'user' ? 'You' : 'AI'}</div>
      <div className="message-body">
        <span className="visually-hidden">{ROLE_LABELS[role] ?? role}:</span>
        {parts.map((part, i) => (
          <Part key={part.toolCallId ?? i} part={part} onApproval={onApproval} />
        ))}
      </div>
    </li>
  );
}

function Part({ part, onApproval }) {
  if (part.type === 'text') {
    if (!part.text) return null;
    return <div className="text" data-testid="text">{part.text}</div>;
  }
  if (part.type === 'reasoning') {
    if (!part.text) return null;
    return (
      <details className="reasoning">
        <summary>Reasoning</summary>
        <div className="text">{part.text}</div>
      </details>
    );
  }
  if (isToolUIPart(part)) return <ToolCall part={part} onApproval={onApproval} />;
  return null; // step-start, sources, files, data parts: not shown in this demo
}

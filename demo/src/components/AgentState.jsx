import { useState } from 'react';

/**
 * The agent's synced state, live in every tab: each top-level field, and a
 * small form that sets one through the agent's `setStateField` callable.
 */
export function AgentState({ agent }) {
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [error, setError] = useState(null);
  const fields = Object.entries(agent.state ?? {});

  async function submit(event) {
    event.preventDefault();
    if (!key.trim()) return;
    setError(null);
    try {
      await agent.stub.setStateField(key.trim(), value);
      setValue('');
    } catch (e) {
      setError(e.message);
    }
  }

  return (
    <section className="agent-state" data-testid="agent-state" aria-label="Agent state">
      <div className="agent-state-fields">
        <span className="agent-state-title">State</span>
        {fields.length === 0 && <span className="agent-state-empty">empty</span>}
        {fields.map(([name, v]) => (
          <span key={name} className="badge agent-state-field" data-testid={`state-field-${name}`}>
            <strong>{name}</strong> {typeof v === 'string' ? v : JSON.stringify(v)}
          </span>
        ))}
      </div>
      <form className="agent-state-form" onSubmit={submit}>
        <input aria-label="Field" placeholder="field" value={key} data-testid="state-key"
          onChange={(e) => setKey(e.target.value)} />
        <input aria-label="Value" placeholder="value" value={value} data-testid="state-value"
          onChange={(e) => setValue(e.target.value)} />
        <button className="button" type="submit" data-testid="state-set">Set</button>
      </form>
      {error && <span className="tool-error" data-testid="state-error">{error}</span>}
    </section>
  );
}

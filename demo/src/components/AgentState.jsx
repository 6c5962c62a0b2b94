import { useState } from 'react';

/** How far ahead the reminder button sets its reminder. */
const REMIND_IN_SECONDS = 5;

/**
 * The agent's synced state, live in every tab: each top-level field, and a
 * small form that sets one through the agent's `setStateField` callable or
 * sets a reminder through its `remind` callable (a schedule on the agent
 * that shows `⏳ text` under `reminder` now and `⏰ text` when it is due).
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

  async function remind() {
    const text = value.trim();
    if (!text) return;
    setError(null);
    try {
      await agent.stub.remind(text, REMIND_IN_SECONDS);
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
        <button className="button" type="button" data-testid="state-remind" onClick={remind}
          title={`Remind me of the value in ${REMIND_IN_SECONDS} s`}>
          Remind in {REMIND_IN_SECONDS} s
        </button>
      </form>
      {error && <span className="tool-error" data-testid="state-error">{error}</span>}
    </section>
  );
}

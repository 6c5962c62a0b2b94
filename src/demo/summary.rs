//! The demo agent's model-written summary (on with the var
//! `DEMO_SUMMARIZE=1`): what the context policy leaves out is folded, with
//! the summary before it, into a new summary the agent's own model writes.

use crate::agent::AgentHandle;
use crate::core::SummaryRequest;

/// The instruction the model is given.
pub const SUMMARY_INSTRUCTION: &str = "Summarize this conversation for whoever continues it: \
the facts, names and decisions, in a few sentences. Answer with the summary only.";

/// The prompt: the summary so far, then the messages to fold into it.
pub fn summary_prompt(request: &SummaryRequest) -> String {
    let mut prompt = String::new();
    if let Some(previous) = &request.previous {
        prompt.push_str(&format!("Summary so far:\n{previous}\n\n"));
    }
    prompt.push_str("Messages to fold in:\n");
    for message in &request.dropped {
        let role = format!("{:?}", message.role).to_lowercase();
        prompt.push_str(&format!("{role}: {}\n", message.text()));
    }
    prompt
}

/// Asks the agent's model for the summary (`None`, leaving the messages
/// out, when it fails or writes nothing).
pub async fn summarize(request: SummaryRequest, agent: AgentHandle) -> Option<String> {
    let prompt = summary_prompt(&request);
    let text = agent
        .generate_text(SUMMARY_INSTRUCTION, &prompt, None)
        .await
        .ok()?;
    Some(text).filter(|t| !t.trim().is_empty())
}

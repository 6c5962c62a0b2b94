//! What the scripted model answers: the directives and plain-language rules
//! read from the conversation (the syntax of the repository's scripted
//! model server, so far as a model with no I/O can follow it). A pure
//! function of the request; `scripted.rs` turns its plan into events.

use crate::model::{ModelFailure, ModelMessage, ModelRequest};

/// Tool results longer than this are answered with their size only.
const LARGE_RESULT_CHARS: usize = 65_536;

/// The reply planned for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedReply {
    /// A text answer.
    Text(String),
    /// Tool calls: each tool's name and its arguments as JSON text.
    Tools(Vec<(String, String)>),
    /// `said` streams, then the call fails with `failure`.
    Failure { said: String, failure: ModelFailure },
}

/// The reply to `request`. A request that asks the model to continue a
/// cut answer gets the answer to the real question minus what was said.
pub fn plan_reply(request: &ModelRequest) -> ScriptedReply {
    let messages = &request.messages;
    let users: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m {
            ModelMessage::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    let last_user = users.last().copied().unwrap_or("");
    let continuing = is_continue_instruction(last_user);
    let asked = match continuing {
        true => users.iter().rev().nth(1).copied().unwrap_or(""),
        false => last_user,
    };
    let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    let reply = fresh_reply(messages, asked.trim(), &offered);
    match reply {
        ScriptedReply::Text(text) if continuing => {
            let said = cut_answer(messages);
            match text.strip_prefix(said.as_str()) {
                Some(rest) => ScriptedReply::Text(rest.to_string()),
                None => ScriptedReply::Text(text),
            }
        }
        other => other,
    }
}

/// The instruction a recovering agent sends after its cut answer.
fn is_continue_instruction(text: &str) -> bool {
    let prefix = "continue your previous response";
    let text = text.trim();
    text.get(..prefix.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(prefix))
}

/// The assistant's text since the last user message (before the
/// continue instruction): the cut answer.
fn cut_answer(messages: &[ModelMessage]) -> String {
    let end = messages.len().saturating_sub(1);
    let mut parts = Vec::new();
    for message in messages[..end].iter().rev() {
        match message {
            ModelMessage::Assistant { content, .. } => parts.push(content.as_deref().unwrap_or("")),
            _ => break,
        }
    }
    parts.reverse();
    parts.concat()
}

fn fresh_reply(messages: &[ModelMessage], text: &str, offered: &[&str]) -> ScriptedReply {
    if let Some(ModelMessage::Tool { .. }) = messages.last() {
        return ScriptedReply::Text(tool_results(messages));
    }
    let echo = format!("You said: {text}");
    if let Some(status) = directive(text, "[http:").and_then(|s| s.parse::<u16>().ok()) {
        let failure = ModelFailure::http(status, format!("scripted error {status}"), None, None);
        return ScriptedReply::Failure {
            said: String::new(),
            failure,
        };
    }
    let first_two: String = echo.split_inclusive(' ').take(2).collect();
    if text.contains("[stream-error]") {
        let failure = ModelFailure::transient("scripted stream failure");
        return ScriptedReply::Failure {
            said: first_two,
            failure,
        };
    }
    if text.contains("[truncate]") {
        let failure = ModelFailure::cut_off("scripted reply cut off");
        return ScriptedReply::Failure {
            said: first_two,
            failure,
        };
    }
    if let Some(calls) = tool_each_directive(text) {
        return ScriptedReply::Tools(calls);
    }
    if let Some(call) = tool_directive(text) {
        return ScriptedReply::Tools(vec![call]);
    }
    if let Some(names) = directive(text, "[tools:") {
        let calls: Vec<(String, String)> = names
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(|n| (n.to_string(), "{}".to_string()))
            .collect();
        if !calls.is_empty() {
            return ScriptedReply::Tools(calls);
        }
    }
    if let Some(n) = directive(text, "[tokens:").and_then(|s| s.parse::<usize>().ok()) {
        let words: Vec<String> = (1..=n).map(|i| format!("w{i}")).collect();
        return ScriptedReply::Text(words.join(" "));
    }
    match plain_language_call(&without_directives(text), offered) {
        Some(call) => ScriptedReply::Tools(vec![call]),
        None => ScriptedReply::Text(echo),
    }
}

/// `Tool results: name=content; …` for the tool results that end the conversation.
fn tool_results(messages: &[ModelMessage]) -> String {
    let start = messages
        .iter()
        .rposition(|m| !matches!(m, ModelMessage::Tool { .. }))
        .map_or(0, |i| i + 1);
    let name_of = |id: &str| {
        messages.iter().find_map(|m| match m {
            ModelMessage::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .find(|c| c.id == id)
                .map(|c| c.name.clone()),
            _ => None,
        })
    };
    let parts: Vec<String> = messages[start..]
        .iter()
        .filter_map(|m| match m {
            ModelMessage::Tool {
                tool_call_id,
                content,
            } => {
                let label = name_of(tool_call_id).unwrap_or_else(|| tool_call_id.clone());
                Some(match content.chars().count() > LARGE_RESULT_CHARS {
                    true => format!("{label}=<{} bytes>", content.len()),
                    false => format!("{label}={content}"),
                })
            }
            _ => None,
        })
        .collect();
    format!("Tool results: {}", parts.join("; "))
}

/// The text between `open` (e.g. `[http:`) and the next `]`.
fn directive<'a>(text: &'a str, open: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let rest = &text[start..];
    rest.find(']').map(|end| &rest[..end])
}

/// The name after `open` (up to `:`, with no `]` or whitespace) and the text after it.
fn named<'a>(text: &'a str, open: &str) -> Option<(&'a str, &'a str)> {
    let mut from = 0;
    while let Some(found) = text[from..].find(open) {
        let start = from + found + open.len();
        let rest = &text[start..];
        if let Some(colon) = rest.find(':') {
            let name = &rest[..colon];
            if !name.is_empty() && !name.contains(|c: char| c == ']' || c.is_whitespace()) {
                return Some((name, &rest[colon + 1..]));
            }
        }
        from = start;
    }
    None
}

/// `[tool:NAME:JSON]`: the first `}]` after which the JSON parses wins (as
/// compact JSON); unreadable JSON is passed on verbatim, as a model's would be.
fn tool_directive(text: &str) -> Option<(String, String)> {
    let (name, rest) = named(text, "[tool:")?;
    let closes: Vec<usize> = rest.match_indices("}]").map(|(i, _)| i).collect();
    for &i in &closes {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(&rest[..=i]) {
            return Some((name.to_string(), value.to_string()));
        }
    }
    let args = match (closes.first(), rest.find(']')) {
        (Some(&i), _) => &rest[..=i],
        (None, Some(end)) => &rest[..end],
        (None, None) => "{}",
    };
    Some((name.to_string(), args.to_string()))
}

/// `[tool-each:NAME:[JSON, …]]`: one call of NAME per element (its arguments).
fn tool_each_directive(text: &str) -> Option<Vec<(String, String)>> {
    let (name, rest) = named(text, "[tool-each:")?;
    rest.match_indices("]]").find_map(|(i, _)| {
        let list = serde_json::from_str::<Vec<serde_json::Value>>(&rest[..=i]).ok()?;
        let calls: Vec<(String, String)> = list
            .iter()
            .map(|args| (name.to_string(), args.to_string()))
            .collect();
        (!calls.is_empty()).then_some(calls)
    })
}

/// The text with every `[…]` directive taken out and spaces collapsed.
fn without_directives(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => {
                depth -= 1;
                out.push(' ');
            }
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The plain-language rules, in order; a rule whose tool is not offered is skipped.
fn plain_language_call(plain: &str, offered: &[&str]) -> Option<(String, String)> {
    let lower = plain.to_ascii_lowercase();
    let word_after = |key: &str| -> Option<String> {
        let at = lower.find(key)? + key.len();
        let rest = plain.get(at..)?;
        Some(rest.to_string())
    };
    type Rule<'a> = (&'a str, Box<dyn Fn() -> Option<serde_json::Value> + 'a>);
    let rules: Vec<Rule> = vec![
        (
            "get_weather",
            Box::new(|| {
                let rest = word_after("weather in ")?;
                let city = rest
                    .split(['?', '!', '.', ',', ';', ':', '\n'])
                    .next()?
                    .trim();
                (!city.is_empty()).then(|| serde_json::json!({ "city": city }))
            }),
        ),
        (
            "getUserTimezone",
            Box::new(|| lower.contains("timezone").then(|| serde_json::json!({}))),
        ),
        (
            "getScreenSize",
            Box::new(|| lower.contains("screen size").then(|| serde_json::json!({}))),
        ),
        (
            "delete_file",
            Box::new(|| {
                let rest = word_after("delete ")?;
                let path = rest.split_whitespace().next()?;
                let path = path.trim_end_matches(['?', '!', ',', ';']);
                (!path.is_empty()).then(|| serde_json::json!({ "path": path }))
            }),
        ),
        (
            "parent_clock",
            Box::new(|| has_word(&lower, "clock").then(|| serde_json::json!({}))),
        ),
        (
            "parent_fail",
            Box::new(|| has_word(&lower, "fail").then(|| serde_json::json!({}))),
        ),
        (
            "delegate",
            Box::new(|| {
                let rest = word_after("delegate ")?;
                let (agent, task) = rest.split_once(':')?;
                let agent = agent.trim();
                let task = task.trim();
                (!agent.is_empty() && !agent.contains(' ') && !task.is_empty())
                    .then(|| serde_json::json!({ "agent": agent, "task": task }))
            }),
        ),
    ];
    rules
        .iter()
        .filter(|(name, _)| offered.contains(name))
        .find_map(|(name, rule)| rule().map(|args| (name.to_string(), args.to_string())))
}

fn has_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|w| w == word)
}

//! What the model sees: the transcript turned into provider messages, and the
//! tool list for a turn (server tools, then client tools replacing same names).

use serde_json::{json, Value};

use crate::model::{ModelFile, ModelMessage, ModelToolCall, ToolDefinition};
use crate::protocol::{ClientToolSchema, Part, Role, ToolState, UIMessage};

use crate::core::vocab::tool_spec::ToolSpec;

/// Said to the model when its context ends with its own (cut) answer.
pub const CONTINUE_INSTRUCTION: &str = "Continue your previous response from exactly where it stopped. Do not repeat anything you already said.";
/// What the model reads for a call the user denied.
pub const DENIED_TOOL_RESULT: &str = "Tool call execution denied.";

pub fn model_messages(system: &str, messages: &[&UIMessage]) -> Vec<ModelMessage> {
    let mut out = Vec::with_capacity(messages.len() + 2);
    if !system.is_empty() {
        out.push(ModelMessage::System {
            content: system.to_string(),
        });
    }
    for message in messages {
        push_model_messages(&mut out, message);
    }
    finish_model_messages(&mut out);
    out
}

/// What one message becomes for the model (an assistant message: a message
/// per step, each followed by its tool results).
pub fn push_model_messages(out: &mut Vec<ModelMessage>, message: &UIMessage) {
    match message.role {
        Role::User => out.push(ModelMessage::User {
            content: message.text(),
            files: user_files(message),
        }),
        Role::System => out.push(ModelMessage::System {
            content: message.text(),
        }),
        Role::Assistant => push_assistant(out, message),
    }
}

/// A conversation that ends with the model's own answer asks it to go on.
pub fn finish_model_messages(out: &mut Vec<ModelMessage>) {
    if matches!(out.last(), Some(ModelMessage::Assistant { tool_calls, .. }) if tool_calls.is_empty())
    {
        out.push(ModelMessage::User {
            content: CONTINUE_INSTRUCTION.to_string(),
            files: Vec::new(),
        });
    }
}

/// The `file` parts of a user message (`{type:"file", mediaType, url,
/// filename?}`); a part without a string `url` and `mediaType` is left out.
fn user_files(message: &UIMessage) -> Vec<ModelFile> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Other(map) if map.get("type").and_then(Value::as_str) == Some("file") => {
                Some(ModelFile {
                    media_type: map.get("mediaType")?.as_str()?.to_string(),
                    url: map.get("url")?.as_str()?.to_string(),
                    filename: map
                        .get("filename")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                })
            }
            _ => None,
        })
        .collect()
}

/// One assistant message may hold several steps; each becomes an assistant
/// message (text + tool calls) followed by one tool message per settled call.
fn push_assistant(out: &mut Vec<ModelMessage>, message: &UIMessage) {
    let mut steps: Vec<Vec<&Part>> = vec![Vec::new()];
    for part in &message.parts {
        if matches!(part, Part::StepStart) {
            if steps.last().is_some_and(|s| !s.is_empty()) {
                steps.push(Vec::new());
            }
        } else if let Some(step) = steps.last_mut() {
            step.push(part);
        }
    }
    for step in steps {
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut results = Vec::new();
        for part in step {
            match part {
                Part::Text(t) => text.push_str(&t.text),
                Part::Tool(tool) if tool.state.is_settled() => {
                    calls.push(ModelToolCall {
                        id: tool.tool_call_id.clone(),
                        name: tool.tool_name.clone(),
                        arguments: tool.input.clone().unwrap_or_else(|| json!({})).to_string(),
                    });
                    results.push(ModelMessage::Tool {
                        tool_call_id: tool.tool_call_id.clone(),
                        content: tool_result_text(tool),
                    });
                }
                _ => {}
            }
        }
        if text.is_empty() && calls.is_empty() {
            continue;
        }
        out.push(ModelMessage::Assistant {
            content: (!text.is_empty()).then_some(text),
            tool_calls: calls,
        });
        out.extend(results);
    }
}

fn tool_result_text(tool: &crate::protocol::ToolPart) -> String {
    match tool.state {
        ToolState::OutputAvailable => match &tool.output {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => "null".to_string(),
        },
        ToolState::OutputError => tool.error_text.clone().unwrap_or_default(),
        _ => DENIED_TOOL_RESULT.to_string(),
    }
}

/// Server tools first, then client tools; a client tool replaces a server
/// tool of the same name unless that one is not overridable (then the client
/// tool is left out).
pub fn turn_tools(server: &[ToolSpec], client: &[ClientToolSchema]) -> Vec<ToolDefinition> {
    let mut out: Vec<ToolDefinition> = Vec::with_capacity(server.len() + client.len());
    let mut put = |def: ToolDefinition| match out.iter_mut().find(|d| d.name == def.name) {
        Some(slot) => *slot = def,
        None => out.push(def),
    };
    for tool in server {
        put(ToolDefinition {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.clone(),
        });
    }
    let protected = |name: &str| server.iter().any(|t| t.name == name && !t.is_overridable());
    for tool in client.iter().filter(|t| !protected(&t.name)) {
        put(ToolDefinition {
            name: tool.name.clone(),
            description: tool.description.clone().unwrap_or_default(),
            parameters: tool
                .parameters
                .clone()
                .unwrap_or_else(|| json!({"type":"object"})),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{TextPart, ToolPart};

    #[test]
    fn a_tool_step_becomes_an_assistant_call_and_a_tool_message() {
        let mut a = UIMessage::assistant("a1");
        a.parts.push(Part::StepStart);
        let mut tool = ToolPart::new("c1", "get_weather", ToolState::OutputAvailable);
        tool.input = Some(json!({"city":"Paris"}));
        tool.output = Some(json!({"tempC":21}));
        a.parts.push(Part::Tool(tool));
        a.parts.push(Part::StepStart);
        a.parts.push(Part::Text(TextPart::done("It is 21C.")));
        let u = UIMessage::user_text("u1", "weather in Paris");
        let next = UIMessage::user_text("u2", "thanks");
        let msgs = model_messages("sys", &[&u, &a, &next]);
        assert_eq!(msgs.len(), 6);
        assert_eq!(
            msgs[2],
            ModelMessage::Assistant {
                content: None,
                tool_calls: vec![ModelToolCall {
                    id: "c1".into(),
                    name: "get_weather".into(),
                    arguments: r#"{"city":"Paris"}"#.into()
                }]
            }
        );
        assert_eq!(
            msgs[3],
            ModelMessage::Tool {
                tool_call_id: "c1".into(),
                content: r#"{"tempC":21}"#.into()
            }
        );
        assert!(
            matches!(&msgs[4], ModelMessage::Assistant { content: Some(t), .. } if t == "It is 21C.")
        );
    }

    #[test]
    fn a_context_ending_with_assistant_text_asks_the_model_to_continue() {
        let mut a = UIMessage::assistant("a1");
        a.parts.push(Part::Text(TextPart::done("Half an ans")));
        let msgs = model_messages("", &[&UIMessage::user_text("u", "q"), &a]);
        assert_eq!(
            msgs.last(),
            Some(&ModelMessage::User {
                content: CONTINUE_INSTRUCTION.into(),
                files: Vec::new(),
            })
        );
    }

    #[test]
    fn a_client_tool_replaces_a_server_tool_of_the_same_name() {
        let server = vec![ToolSpec::new("lookup", "server", json!({"type":"object"}))];
        let client = vec![ClientToolSchema {
            name: "lookup".into(),
            description: Some("client".into()),
            parameters: None,
        }];
        let tools = turn_tools(&server, &client);
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].description, "client");
    }
}

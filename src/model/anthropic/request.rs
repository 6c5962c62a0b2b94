//! The Messages API request body for a [`ModelRequest`]: system messages
//! become the top-level `system` blocks; the conversation becomes
//! alternating `user` / `assistant` messages of content blocks (text,
//! `image`, `document`, `tool_use`, and `tool_result` in the user message
//! after the call); the tools get `input_schema`. Prompt caching:
//! `cache_control` breakpoints go on the last tool, the last system block,
//! the last block of the message before the newest one and the last block
//! of the newest one, so each request reads the cache the one before it
//! wrote (the start of the request stays byte-identical as the chat grows).

use serde_json::{json, Map, Value};

use crate::model::files::text_with_notes;
use crate::model::{ModelFile, ModelMessage, ModelRequest, ToolChoice};
use crate::protocol::gate::{self, MODEL_TOOL_INPUT};

/// `max_tokens` is required by the API; this is sent when no setting names one.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The POST body for `request`, streaming.
pub fn request_body(request: &ModelRequest) -> String {
    let settings = &request.settings;
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    body.insert(
        "max_tokens".into(),
        json!(settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    body.insert("stream".into(), json!(true));
    let mut system: Vec<Value> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            ModelMessage::System { content } if !content.is_empty() => {
                Some(json!({"type": "text", "text": content}))
            }
            _ => None,
        })
        .collect();
    mark_last(&mut system);
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let mut messages = conversation(&request.messages);
    let count = messages.len();
    for position in [count.checked_sub(2), count.checked_sub(1)]
        .into_iter()
        .flatten()
    {
        if let Some(Value::Array(blocks)) = messages[position].get_mut("content") {
            mark_last(blocks);
        }
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
        mark_last(&mut tools);
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &request.tool_choice {
            let choice = match choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            };
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = settings.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    if !settings.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(settings.stop));
    }
    settings.add_provider_options(&mut body);
    Value::Object(body).to_string()
}

/// Puts a cache breakpoint on the last block of `blocks`.
fn mark_last(blocks: &mut [Value]) {
    if let Some(Value::Object(block)) = blocks.last_mut() {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

/// The non-system messages as Messages API messages; consecutive messages
/// of one role (a tool result after another, a user message after a tool
/// result) share one message, as the API wants roles to alternate.
fn conversation(messages: &[ModelMessage]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            ModelMessage::System { .. } => continue,
            ModelMessage::User { content, files } => ("user", user_blocks(content, files)),
            ModelMessage::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if let Some(text) = content.as_deref().filter(|t| !t.trim().is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": tool_input(&call.arguments),
                    }));
                }
                ("assistant", blocks)
            }
            ModelMessage::Tool {
                tool_call_id,
                content,
            } => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": tool_call_id,
                    "content": content,
                })],
            ),
        };
        match out.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, mut blocks)| {
            if blocks.is_empty() {
                blocks.push(json!({"type": "text", "text": "(empty)"}));
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

/// A user message's blocks: its text, then each image (`data:` bytes or a
/// link) and PDF as the API takes them, any other file as a text note.
fn user_blocks(text: &str, files: &[ModelFile]) -> Vec<Value> {
    let mut blocks = Vec::new();
    let mut others = Vec::new();
    for file in files {
        match file_block(file) {
            Some(block) => blocks.push(block),
            None => others.push(file.clone()),
        }
    }
    let text = text_with_notes(text, &others);
    if !text.is_empty() {
        blocks.insert(0, json!({"type": "text", "text": text}));
    }
    blocks
}

fn file_block(file: &ModelFile) -> Option<Value> {
    let kind = match file.media_type.as_str() {
        t if t.starts_with("image/") => "image",
        "application/pdf" => "document",
        _ => return None,
    };
    let source = match file.url.strip_prefix("data:") {
        Some(rest) => {
            let (head, data) = rest.split_once(',')?;
            let media_type = head.strip_suffix(";base64")?;
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        None if file.url.starts_with("https:") || file.url.starts_with("http:") => {
            json!({"type": "url", "url": file.url})
        }
        None => return None,
    };
    Some(json!({"type": kind, "source": source}))
}

/// A tool call's arguments as the `input` object (read through the gate;
/// arguments that are not a JSON object are sent as an empty one).
fn tool_input(arguments: &str) -> Value {
    match gate::read_value(arguments, &MODEL_TOOL_INPUT) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelSettings, ModelToolCall, ToolDefinition};

    fn body_of(request: &ModelRequest) -> Value {
        serde_json::from_str(&request_body(request)).expect("the body is JSON")
    }

    fn conversation_request() -> ModelRequest {
        ModelRequest {
            settings: ModelSettings {
                model: "claude-test".into(),
                temperature: Some(0.2),
                stop: vec!["END".into()],
                ..ModelSettings::default()
            },
            messages: vec![
                ModelMessage::System {
                    content: "Be brief.".into(),
                },
                ModelMessage::User {
                    content: "what is this?".into(),
                    files: vec![
                        ModelFile {
                            media_type: "image/png".into(),
                            url: "data:image/png;base64,iVBOR".into(),
                            filename: Some("dot.png".into()),
                        },
                        ModelFile {
                            media_type: "text/csv".into(),
                            url: "data:text/csv;base64,YSxi".into(),
                            filename: Some("t.csv".into()),
                        },
                    ],
                },
                ModelMessage::Assistant {
                    content: Some("Let me look.".into()),
                    tool_calls: vec![ModelToolCall {
                        id: "toolu_1".into(),
                        name: "lookup".into(),
                        arguments: r#"{"q":"dot"}"#.into(),
                    }],
                },
                ModelMessage::Tool {
                    tool_call_id: "toolu_1".into(),
                    content: "a dot".into(),
                },
            ],
            tools: vec![ToolDefinition {
                name: "lookup".into(),
                description: "Looks up".into(),
                parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            }],
            tool_choice: Some(ToolChoice::Required),
            ..ModelRequest::default()
        }
    }

    #[test]
    fn the_conversation_becomes_blocks_with_images_tool_use_and_tool_results() {
        let body = body_of(&conversation_request());
        assert_eq!(body["model"], "claude-test");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["stream"], true);
        assert_eq!(body["temperature"], 0.2);
        assert_eq!(body["stop_sequences"], json!(["END"]));
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        assert_eq!(body["system"][0]["text"], "Be brief.");
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 3);
        let user = &messages[0]["content"];
        assert_eq!(user[0]["type"], "text");
        assert!(user[0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("what is this?\n[Attached file t.csv")));
        assert_eq!(
            user[1]["source"],
            json!({"type": "base64", "media_type": "image/png", "data": "iVBOR"})
        );
        assert_eq!(messages[1]["role"], "assistant");
        let call = &messages[1]["content"][1];
        assert_eq!(
            (&call["type"], &call["id"], &call["name"], &call["input"]),
            (
                &json!("tool_use"),
                &json!("toolu_1"),
                &json!("lookup"),
                &json!({"q": "dot"})
            )
        );
        assert_eq!(messages[2]["role"], "user");
        assert_eq!(messages[2]["content"][0]["type"], "tool_result");
        assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_1");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    }

    #[test]
    fn cache_breakpoints_sit_on_the_tools_the_system_and_the_two_newest_messages() {
        let body = body_of(&conversation_request());
        let marked = |v: &Value| v.get("cache_control") == Some(&json!({"type": "ephemeral"}));
        assert!(marked(&body["tools"][0]));
        assert!(marked(&body["system"][0]));
        let messages = body["messages"].as_array().expect("messages");
        assert!(
            !marked(&messages[0]["content"][1]),
            "older messages carry none"
        );
        assert!(marked(&messages[1]["content"][1]));
        assert!(marked(&messages[2]["content"][0]));
        let count = request_body(&conversation_request())
            .matches("cache_control")
            .count();
        assert!(
            count <= 4,
            "the API takes at most four breakpoints: {count}"
        );
    }

    #[test]
    fn the_start_of_the_request_stays_the_same_as_the_chat_grows() {
        let first = conversation_request();
        let mut next = first.clone();
        next.messages.push(ModelMessage::Assistant {
            content: Some("A dot.".into()),
            tool_calls: Vec::new(),
        });
        next.messages.push(ModelMessage::User {
            content: "thanks".into(),
            files: Vec::new(),
        });
        let (a, b) = (request_body(&first), request_body(&next));
        let cut = a.find("\"messages\"").expect("messages");
        let user = a[cut..].find("{\"role\":\"assistant\"").expect("assistant") + cut;
        assert_eq!(
            a[..user],
            b[..user],
            "the request's start is byte-identical"
        );
    }

    #[test]
    fn unreadable_tool_arguments_are_sent_as_an_empty_input() {
        assert_eq!(tool_input("{\"a\":"), json!({}));
        assert_eq!(tool_input("[1]"), json!({}));
    }
}

//! Builds the JSON body of a streaming `POST {base}/chat/completions` request
//! from a provider-neutral [`ModelRequest`].

use serde_json::{json, Map, Value};

use crate::model::{
    ModelMessage, ModelRequest, ModelToolCall, StructuredOutput, ToolChoice, ToolDefinition,
};

/// The request body: `stream: true` with usage reporting, the conversation in
/// Chat Completions shape, and `tools` (omitted when there are none).
/// `temperature`, `max_tokens`, `top_p`, `seed`, `stop` and `response_format`
/// (structured output) are only sent when set; the provider options last,
/// each only where the body has no such key.
pub fn request_body(request: &ModelRequest) -> String {
    let ModelRequest {
        settings,
        messages,
        tools,
        headers: _,
        tool_choice,
    } = request;
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    body.insert(
        "messages".into(),
        Value::Array(messages.iter().map(message_json).collect()),
    );
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = settings.max_tokens {
        body.insert("max_tokens".into(), json!(max_tokens));
    }
    if let Some(top_p) = settings.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    if let Some(seed) = settings.seed {
        body.insert("seed".into(), json!(seed));
    }
    if !settings.stop.is_empty() {
        body.insert("stop".into(), json!(settings.stop));
    }
    if let Some(output) = &settings.structured_output {
        body.insert("response_format".into(), response_format_json(output));
    }
    if !tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(tools.iter().map(tool_definition_json).collect()),
        );
        if let Some(choice) = tool_choice {
            body.insert("tool_choice".into(), tool_choice_json(choice));
        }
    }
    settings.add_provider_options(&mut body);
    Value::Object(body).to_string()
}

/// Chat Completions' structured output: `{type: "json_schema", json_schema: {name, schema, strict}}`.
fn response_format_json(output: &StructuredOutput) -> Value {
    json!({
        "type": "json_schema",
        "json_schema": {
            "name": output.name,
            "schema": output.schema,
            "strict": output.strict,
        },
    })
}

/// Chat Completions' `tool_choice`: `"auto"`, `"none"`, `"required"` or a named function.
fn tool_choice_json(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

pub(crate) fn message_json(message: &ModelMessage) -> Value {
    match message {
        ModelMessage::System { content } => json!({ "role": "system", "content": content }),
        ModelMessage::User { content, files } if files.is_empty() => {
            json!({ "role": "user", "content": content })
        }
        ModelMessage::User { content, files } => {
            json!({ "role": "user", "content": crate::model::files::openai_content(content, files) })
        }
        ModelMessage::Assistant {
            content,
            tool_calls,
        } => assistant_message_json(content.as_deref(), tool_calls),
        ModelMessage::Tool {
            tool_call_id,
            content,
        } => json!({ "role": "tool", "tool_call_id": tool_call_id, "content": content }),
    }
}

/// An assistant turn. With tool calls and no text the content is `null`; with
/// neither it is `""`, which every compatible server accepts.
fn assistant_message_json(content: Option<&str>, tool_calls: &[ModelToolCall]) -> Value {
    let text = content.filter(|text| !text.is_empty());
    if tool_calls.is_empty() {
        return json!({ "role": "assistant", "content": text.unwrap_or("") });
    }
    let calls: Vec<Value> = tool_calls
        .iter()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": { "name": call.name, "arguments": call.arguments },
            })
        })
        .collect();
    json!({ "role": "assistant", "content": text, "tool_calls": calls })
}

pub(crate) fn tool_definition_json(tool: &ToolDefinition) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelSettings;

    fn parsed(body: &str) -> Value {
        serde_json::from_str(body).expect("request body is valid JSON")
    }

    fn body_of(
        settings: &ModelSettings,
        messages: &[ModelMessage],
        tools: &[ToolDefinition],
    ) -> String {
        request_body(&ModelRequest {
            settings: settings.clone(),
            messages: messages.to_vec(),
            tools: tools.to_vec(),
            headers: Vec::new(),
            tool_choice: None,
        })
    }

    /// System prompt, `question`, a tool call with its result, and an answer.
    fn weather_conversation(question: &str) -> Vec<ModelMessage> {
        vec![
            ModelMessage::System {
                content: "be brief".into(),
            },
            ModelMessage::User {
                content: question.into(),
                files: Vec::new(),
            },
            ModelMessage::Assistant {
                content: None,
                tool_calls: vec![ModelToolCall {
                    id: "call_1".into(),
                    name: "get_weather".into(),
                    arguments: r#"{"city":"Oslo"}"#.into(),
                }],
            },
            ModelMessage::Tool {
                tool_call_id: "call_1".into(),
                content: "rain".into(),
            },
            ModelMessage::Assistant {
                content: Some("It rains.".into()),
                tool_calls: vec![],
            },
        ]
    }

    #[test]
    fn body_carries_the_whole_conversation_and_tools() {
        let settings = ModelSettings {
            model: "gpt-test".into(),
            temperature: Some(0.5),
            max_tokens: Some(256),
            ..ModelSettings::default()
        };
        let messages = weather_conversation("weather?");
        let tools = vec![ToolDefinition {
            name: "get_weather".into(),
            description: "Current weather".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        }];

        let expected = json!({
            "model": "gpt-test",
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.5,
            "max_tokens": 256,
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "rain"},
                {"role": "assistant", "content": "It rains."}
            ],
            "tools": [
                {"type": "function", "function": {
                    "name": "get_weather",
                    "description": "Current weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}
                }}
            ]
        });
        assert_eq!(parsed(&body_of(&settings, &messages, &tools)), expected);
    }

    #[test]
    fn unset_options_and_empty_tools_are_omitted() {
        let settings = ModelSettings {
            model: "m".into(),
            ..ModelSettings::default()
        };
        let messages = vec![ModelMessage::User {
            content: "hi".into(),
            files: Vec::new(),
        }];
        let expected = json!({
            "model": "m",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "hi"}]
        });
        assert_eq!(parsed(&body_of(&settings, &messages, &[])), expected);
    }

    #[test]
    fn assistant_text_alongside_tool_calls_is_kept() {
        let message = ModelMessage::Assistant {
            content: Some("Let me check.".into()),
            tool_calls: vec![ModelToolCall {
                id: "a".into(),
                name: "t".into(),
                arguments: "{}".into(),
            }],
        };
        let json = message_json(&message);
        assert_eq!(json["content"], json!("Let me check."));
        assert_eq!(json["tool_calls"][0]["function"]["arguments"], json!("{}"));
    }

    #[test]
    fn empty_assistant_turn_sends_empty_text_not_null() {
        let message = ModelMessage::Assistant {
            content: None,
            tool_calls: vec![],
        };
        assert_eq!(
            message_json(&message),
            json!({"role": "assistant", "content": ""})
        );
    }

    #[test]
    fn text_with_quotes_and_unicode_is_escaped_properly() {
        let settings = ModelSettings::default();
        let messages = vec![ModelMessage::User {
            content: "say \"hi\"\n🌍".into(),
            files: Vec::new(),
        }];
        let body = parsed(&body_of(&settings, &messages, &[]));
        assert_eq!(body["messages"][0]["content"], json!("say \"hi\"\n🌍"));
    }

    /// The exact bytes sent, key order included, for a request using every
    /// message kind, sampling settings, tools and an extra header (which
    /// stays out of the body).
    #[test]
    fn body_bytes_are_exactly_the_chat_completions_request() {
        let request = ModelRequest {
            settings: ModelSettings {
                model: "gpt-test".into(),
                temperature: Some(0.5),
                max_tokens: Some(256),
                ..ModelSettings::default()
            },
            messages: [
                weather_conversation("weather in \"Oslo\"?\n🌍"),
                vec![ModelMessage::Assistant {
                    content: Some("".into()),
                    tool_calls: vec![],
                }],
            ]
            .concat(),
            tools: vec![ToolDefinition {
                name: "get_weather".into(),
                description: "Current weather".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"]
                }),
            }],
            headers: vec![("x-trace".into(), "1".into())],
            tool_choice: None,
        };
        let expected = concat!(
            r#"{"model":"gpt-test","messages":[{"role":"system","content":"be brief"},"#,
            r#"{"role":"user","content":"weather in \"Oslo\"?\n🌍"},"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","#,
            r#""function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"call_1","content":"rain"},"#,
            r#"{"role":"assistant","content":"It rains."},{"role":"assistant","content":""}],"#,
            r#""stream":true,"stream_options":{"include_usage":true},"#,
            r#""temperature":0.5,"max_tokens":256,"#,
            r#""tools":[{"type":"function","function":{"name":"get_weather","#,
            r#""description":"Current weather","parameters":{"type":"object","#,
            r#""properties":{"city":{"type":"string"}},"required":["city"]}}}]}"#,
        );
        assert_eq!(request_body(&request), expected);
    }

    #[test]
    fn minimal_body_bytes() {
        assert_eq!(
            request_body(&ModelRequest::user_text("m", "hi")),
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}"#
        );
    }

    #[test]
    fn tool_choice_is_sent_with_the_tools_in_chat_completions_form() {
        let mut request = ModelRequest::user_text("m", "hi");
        request.tools = vec![ToolDefinition {
            name: "lookup".into(),
            description: "Looks up".into(),
            parameters: json!({"type": "object"}),
        }];
        request.tool_choice = Some(ToolChoice::Tool("lookup".into()));
        let body = parsed(&request_body(&request));
        assert_eq!(
            body["tool_choice"],
            json!({"type": "function", "function": {"name": "lookup"}})
        );
        request.tool_choice = Some(ToolChoice::Required);
        assert_eq!(parsed(&request_body(&request))["tool_choice"], "required");
        request.tools.clear();
        assert!(parsed(&request_body(&request)).get("tool_choice").is_none());
    }

    #[test]
    fn sampling_options_and_structured_output_are_sent_in_chat_completions_form() {
        let mut request = ModelRequest::user_text("m", "hi");
        request.settings.top_p = Some(0.9);
        request.settings.seed = Some(42);
        request.settings.stop = vec!["END".into(), "\n\n".into()];
        request.settings.structured_output = Some(StructuredOutput::new(
            "order",
            json!({"type": "object", "properties": {"id": {"type": "string"}}}),
        ));
        let body = parsed(&request_body(&request));
        assert_eq!(body["top_p"], json!(0.9));
        assert_eq!(body["seed"], json!(42));
        assert_eq!(body["stop"], json!(["END", "\n\n"]));
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {
                "name": "order",
                "schema": {"type": "object", "properties": {"id": {"type": "string"}}},
                "strict": true
            }})
        );
    }

    #[test]
    fn provider_options_are_added_but_never_replace_the_agents_own_fields() {
        let mut request = ModelRequest::user_text("m", "hi");
        request.settings.temperature = Some(0.1);
        let options = json!({
            "reasoning_effort": "low",
            "model": "other",
            "stream": false,
            "temperature": 2.0,
            "messages": [],
            "service_tier": "flex",
            "top_p": 0.5
        });
        request.settings.provider_options = options.as_object().cloned().unwrap_or_default();
        let body = parsed(&request_body(&request));
        assert_eq!(body["reasoning_effort"], "low");
        assert_eq!(body["service_tier"], "flex");
        assert_eq!(body["model"], "m");
        assert_eq!(body["stream"], true);
        assert_eq!(body["temperature"], json!(0.1));
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            body["top_p"],
            json!(0.5),
            "a sampling setting the agent left unset may come from the options"
        );
    }
}

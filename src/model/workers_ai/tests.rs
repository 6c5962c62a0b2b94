//! The Workers AI provider's requests and its stream decoding, tested natively.

use super::*;
use crate::model::{ModelMessage, ModelSettings, ToolDefinition};

fn decode_all(body: &str) -> (Vec<ModelEvent>, Result<(), ModelFailure>) {
    let mut decoder = WorkersAi::new("AI", "wai").decoder();
    let mut events = Vec::new();
    // Fed in small pieces, as a network stream arrives.
    for piece in body.as_bytes().chunks(7) {
        if let Err(failure) = decoder.decode(piece, &mut events) {
            return (events, Err(failure));
        }
    }
    let end = decoder.end(&mut events);
    (events, end)
}

#[test]
fn the_input_keeps_tool_schemas_as_plain_json_and_streams() {
    let request = ModelRequest {
        settings: ModelSettings {
            model: "@cf/meta/llama-3.3-70b-instruct-fp8-fast".into(),
            temperature: Some(0.3),
            max_tokens: None,
            ..ModelSettings::default()
        },
        messages: vec![ModelMessage::User {
            content: "weather?".into(),
            files: Vec::new(),
        }],
        tools: vec![ToolDefinition {
            name: "get_weather".into(),
            description: "Weather".into(),
            parameters: json!({"type":"object","properties":{"city":{"type":"string"}}}),
        }],
        headers: vec![],
        tool_choice: None,
    };
    let CallPlan::Binding(call) = WorkersAi::new("AI", "x").plan(&request) else {
        panic!("a binding call");
    };
    assert_eq!(call.binding, "AI");
    assert_eq!(call.model, "@cf/meta/llama-3.3-70b-instruct-fp8-fast");
    let input: Value = serde_json::from_str(&call.input).expect("JSON");
    assert_eq!(input["stream"], true);
    assert_eq!(input["temperature"], 0.3);
    assert_eq!(
        input["messages"][0],
        json!({"role":"user","content":"weather?"})
    );
    assert_eq!(
        input["tools"][0]["function"]["parameters"]["properties"]["city"]["type"],
        "string"
    );
}

#[test]
fn native_lines_become_text_and_whole_tool_calls() {
    let body = concat!(
        "data: {\"response\":\"Hel\"}\n\n",
        "data: {\"response\":\"lo\"}\n\n",
        "data: {\"response\":\"\",\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}]}\n\n",
        "data: [DONE]\n\n",
    );
    let (events, end) = decode_all(body);
    assert_eq!(end, Ok(()));
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Hel".into()),
            ModelEvent::TextDelta("lo".into()),
            ModelEvent::ToolCallStarted {
                index: 0,
                id: "wai-0-0".into(),
                name: "get_weather".into()
            },
            ModelEvent::ToolCallArgumentsDelta {
                index: 0,
                delta: "{\"city\":\"Oslo\"}".into()
            },
            ModelEvent::Finished {
                reason: FinishReason::ToolCalls,
                usage: None
            },
        ]
    );
}

#[test]
fn openai_style_chunks_are_decoded_as_openai_chunks() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let (events, end) = decode_all(body);
    assert_eq!(end, Ok(()));
    assert_eq!(events[0], ModelEvent::TextDelta("Hi".into()));
    assert!(events.contains(&ModelEvent::ToolCallStarted {
        index: 0,
        id: "c1".into(),
        name: "get_weather".into()
    }));
    assert!(matches!(
        events.last(),
        Some(ModelEvent::Finished {
            reason: FinishReason::ToolCalls,
            ..
        })
    ));
}

#[test]
fn a_stream_without_done_is_cut_and_an_error_line_is_the_providers() {
    let (_, end) = decode_all("data: {\"response\":\"Hel\"}\n\n");
    assert!(end.is_err_and(|f| f.cut));
    let (_, end) = decode_all("data: {\"error\":{\"message\":\"model exploded\"}}\n\n");
    let failure = end.expect_err("an error");
    assert!(failure.text.contains("model exploded") && !failure.cut);
}

#[test]
fn each_call_mints_its_own_tool_call_ids() {
    let provider = WorkersAi::new("AI", "p");
    let line = "data: {\"tool_calls\":[{\"name\":\"t\",\"arguments\":\"{}\"}]}\n\ndata: [DONE]\n\n";
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let mut decoder = provider.decoder();
            let mut events = Vec::new();
            let _ = decoder.decode(line.as_bytes(), &mut events);
            match &events[0] {
                ModelEvent::ToolCallStarted { id, .. } => id.clone(),
                other => panic!("{other:?}"),
            }
        })
        .collect();
    assert_ne!(ids[0], ids[1]);
}

#[test]
fn capacity_errors_of_the_binding_are_transient() {
    assert!(binding_failure("3040: Capacity temporarily exceeded").transient);
    assert!(!binding_failure("5007: No such model").transient);
}

#[test]
fn tool_choice_none_offers_no_tools_and_a_named_tool_is_offered_alone() {
    let tool = |name: &str| ToolDefinition {
        name: name.into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    };
    let mut request = ModelRequest::user_text("@cf/m", "hi");
    request.tools = vec![tool("a"), tool("b")];
    request.tool_choice = Some(ToolChoice::Tool("b".into()));
    let input: Value = serde_json::from_str(&WorkersAi::input(&request)).unwrap_or_default();
    assert_eq!(input["tools"].as_array().map(Vec::len), Some(1));
    assert_eq!(input["tools"][0]["function"]["name"], "b");
    request.tool_choice = Some(ToolChoice::None);
    let input: Value = serde_json::from_str(&WorkersAi::input(&request)).unwrap_or_default();
    assert!(input.get("tools").is_none());
}

#[test]
fn sampling_options_structured_output_and_provider_options_reach_the_input() {
    let mut request = ModelRequest::user_text("@cf/m", "hi");
    request.settings.top_p = Some(0.8);
    request.settings.seed = Some(7);
    request.settings.stop = vec!["END".into()];
    request.settings.structured_output = Some(crate::model::StructuredOutput::new(
        "city",
        json!({"type": "object", "properties": {"name": {"type": "string"}}}),
    ));
    let options = json!({"reasoning": {"effort": "low"}, "stream": false});
    request.settings.provider_options = options.as_object().cloned().unwrap_or_default();
    let input: Value = serde_json::from_str(&WorkersAi::input(&request)).unwrap_or_default();
    assert_eq!(input["top_p"], json!(0.8));
    assert_eq!(input["seed"], json!(7));
    assert!(
        input.get("stop").is_none(),
        "not part of the binding's input"
    );
    assert_eq!(
        input["response_format"],
        json!({"type": "json_schema", "json_schema":
            {"type": "object", "properties": {"name": {"type": "string"}}}})
    );
    assert_eq!(input["reasoning"], json!({"effort": "low"}));
    assert_eq!(input["stream"], true, "the agent's own field is kept");
}

#[test]
fn usage_on_a_native_line_is_reported_with_the_finish() {
    let body = concat!(
        "data: {\"response\":\"Hi\"}\n\n",
        "data: {\"response\":\"\",\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2,\"total_tokens\":13}}\n\n",
        "data: [DONE]\n\n",
    );
    let (events, end) = decode_all(body);
    assert_eq!(end, Ok(()));
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished {
            reason: FinishReason::Stop,
            usage: Some(crate::model::Usage {
                prompt_tokens: 11,
                completion_tokens: 2,
                cached_tokens: None,
                cache_write_tokens: None,
            }),
        })
    );
}

#[test]
fn a_gateway_slug_goes_through_the_default_gateway_with_images_and_metadata() {
    let provider = WorkersAi::new("AI", "p");
    let mut request = ModelRequest::user_text("openai/gpt-4o-mini", "hi");
    request.messages = vec![ModelMessage::User {
        content: "what is this?".into(),
        files: vec![crate::model::ModelFile {
            media_type: "image/png".into(),
            url: "data:image/png;base64,iVBOR".into(),
            filename: None,
        }],
    }];
    request
        .settings
        .gateway_metadata
        .insert("user".into(), json!("u-7"));
    let CallPlan::Binding(call) = provider.plan(&request) else {
        panic!("a binding call");
    };
    assert_eq!(call.model, "openai/gpt-4o-mini");
    assert_eq!(
        call.options.as_deref(),
        Some(r#"{"gateway":{"id":"default","metadata":{"user":"u-7"}}}"#)
    );
    assert!(call.input.contains("image_url"), "{}", call.input);

    let own = ModelRequest::user_text("@cf/meta/llama-3.1-8b-instruct", "hi");
    let CallPlan::Binding(call) = provider.plan(&own) else {
        panic!("a binding call");
    };
    assert_eq!(call.options, None, "a Workers AI model needs no gateway");
    assert!(is_gateway_slug("anthropic/claude-sonnet-4"));
    assert!(!is_gateway_slug("@cf/x/y") && !is_gateway_slug("gpt-4o") && !is_gateway_slug("/x"));
}

//! The scripted model's replies, read as a provider's events.

use super::*;
use crate::model::{ModelToolCall, ToolDefinition};

fn user(text: &str) -> ModelMessage {
    ModelMessage::User {
        content: text.to_string(),
        files: Vec::new(),
    }
}

fn request(messages: Vec<ModelMessage>, tools: &[&str]) -> ModelRequest {
    ModelRequest {
        messages,
        tools: tools
            .iter()
            .map(|name| ToolDefinition {
                name: name.to_string(),
                description: String::new(),
                parameters: serde_json::json!({ "type": "object" }),
            })
            .collect(),
        ..ModelRequest::default()
    }
}

fn text_of(reply: &LocalReply) -> String {
    reply
        .events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn calls_of(reply: &LocalReply) -> Vec<(String, String)> {
    let mut calls: Vec<(String, String)> = Vec::new();
    for event in &reply.events {
        match event {
            ModelEvent::ToolCallStarted { name, .. } => calls.push((name.clone(), String::new())),
            ModelEvent::ToolCallArgumentsDelta { delta, .. } => {
                if let Some(last) = calls.last_mut() {
                    last.1.push_str(delta);
                }
            }
            _ => {}
        }
    }
    calls
}

fn finish_of(reply: &LocalReply) -> Option<FinishReason> {
    match reply.events.last() {
        Some(ModelEvent::Finished { reason, .. }) => Some(*reason),
        _ => None,
    }
}

#[test]
fn plain_text_is_echoed_word_by_word_and_finishes() {
    let reply = ScriptedModel.reply(&request(vec![user("hello there")], &[]));
    assert_eq!(text_of(&reply), "You said: hello there");
    assert_eq!(
        reply.events[..3],
        [
            ModelEvent::TextDelta("You ".into()),
            ModelEvent::TextDelta("said: ".into()),
            ModelEvent::TextDelta("hello ".into())
        ]
    );
    assert_eq!(finish_of(&reply), Some(FinishReason::Stop));
    assert_eq!(reply.end, Ok(()));
}

#[test]
fn a_tool_directive_calls_that_tool_with_its_json() {
    let text = r#"please [tool:greet:{"name": "Ada [the first]"}] now"#;
    let reply = ScriptedModel.reply(&request(vec![user(text)], &[]));
    assert_eq!(
        calls_of(&reply),
        [(
            "greet".to_string(),
            r#"{"name":"Ada [the first]"}"#.to_string()
        )]
    );
    assert_eq!(finish_of(&reply), Some(FinishReason::ToolCalls));
    let unreadable = ScriptedModel.reply(&request(vec![user("[tool:greet:{oops}]")], &[]));
    assert_eq!(
        calls_of(&unreadable)[0].1,
        "{oops}",
        "passed on as a model's would be"
    );
    let each = r#"[tool-each:greet:[{"name":"a"},{"name":"b"}]]"#;
    let two = ScriptedModel.reply(&request(vec![user(each)], &[]));
    assert_eq!(calls_of(&two).len(), 2);
    let listed = ScriptedModel.reply(&request(vec![user("[tools:a, b]")], &[]));
    assert_eq!(
        calls_of(&listed),
        [("a".into(), "{}".into()), ("b".into(), "{}".into())]
    );
}

#[test]
fn plain_language_calls_only_offered_tools() {
    let asked = || vec![user("What is the weather in Paris, today?")];
    let offered = ScriptedModel.reply(&request(asked(), &["get_weather"]));
    assert_eq!(
        calls_of(&offered),
        [("get_weather".into(), r#"{"city":"Paris"}"#.into())]
    );
    let not_offered = ScriptedModel.reply(&request(asked(), &["delete_file"]));
    assert!(text_of(&not_offered).starts_with("You said: What is the weather"));
    let delete = ScriptedModel.reply(&request(vec![user("delete notes.txt!")], &["delete_file"]));
    assert_eq!(
        calls_of(&delete),
        [("delete_file".into(), r#"{"path":"notes.txt"}"#.into())]
    );
}

#[test]
fn tool_results_are_read_back_and_ids_differ_between_steps() {
    let first = request(vec![user("[tool:greet:{}]")], &["greet"]);
    let step_one = ScriptedModel.reply(&first);
    let Some(ModelEvent::ToolCallStarted { id, .. }) = step_one.events.first() else {
        panic!("no tool call: {step_one:?}");
    };
    assert_eq!(ScriptedModel.reply(&first), step_one, "a retry is the same");
    let mut messages = first.messages.clone();
    messages.push(ModelMessage::Assistant {
        content: None,
        tool_calls: vec![ModelToolCall {
            id: id.clone(),
            name: "greet".into(),
            arguments: "{}".into(),
        }],
    });
    messages.push(ModelMessage::Tool {
        tool_call_id: id.clone(),
        content: "\"Hello!\"".into(),
    });
    let step_two = ScriptedModel.reply(&request(messages.clone(), &["greet"]));
    assert_eq!(text_of(&step_two), "Tool results: greet=\"Hello!\"");
    messages.push(ModelMessage::Assistant {
        content: Some("Tool results: greet=\"Hello!\"".into()),
        tool_calls: vec![],
    });
    messages.push(user("[tool:greet:{}]"));
    let again = ScriptedModel.reply(&request(messages, &["greet"]));
    let Some(ModelEvent::ToolCallStarted { id: later, .. }) = again.events.first() else {
        panic!("no tool call: {again:?}");
    };
    assert_ne!(later, id);
}

#[test]
fn a_continuation_gets_only_what_the_cut_answer_misses() {
    let messages = vec![
        user("hello there"),
        ModelMessage::Assistant {
            content: Some("You said: ".into()),
            tool_calls: vec![],
        },
        user("Continue your previous response from exactly where it stopped."),
    ];
    let reply = ScriptedModel.reply(&request(messages, &[]));
    assert_eq!(text_of(&reply), "hello there");
}

#[test]
fn failure_directives_end_the_stream_with_their_failure() {
    let cut = ScriptedModel.reply(&request(vec![user("story [stream-error]")], &[]));
    assert_eq!(text_of(&cut), "You said: ");
    assert!(cut.end.as_ref().is_err_and(|f| f.transient));
    let refused = ScriptedModel.reply(&request(vec![user("[http:401]")], &[]));
    assert_eq!(refused.end.map_err(|f| f.status), Err(Some(401)));
    let tokens = ScriptedModel.reply(&request(vec![user("[tokens:3]")], &[]));
    assert_eq!(text_of(&tokens), "w1 w2 w3");
}

#[test]
fn the_provider_plans_a_local_reply() {
    let asked = request(vec![user("hi")], &[]);
    assert_eq!(
        ScriptedModel.plan(&asked),
        CallPlan::Local(ScriptedModel.reply(&asked))
    );
}

//! Tests of `client.rs`.

use super::*;
use serde_json::json;

fn chat_frame(body: Value) -> String {
    json!({"id":"r1","type":"cf_agent_use_chat_request",
           "init":{"method":"POST","body": body.to_string()}})
    .to_string()
}

#[test]
fn chat_request_splits_messages_tools_and_custom_body() {
    let text = chat_frame(json!({
        "messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}],
        "trigger":"submit-message",
        "clientTools":[{"name":"getUserTimezone"}],
        "foo": 1
    }));
    let ClientFrame::ChatRequest { id, request } = parse_client_frame(&text).unwrap() else {
        panic!("not a chat request")
    };
    assert_eq!(id, "r1");
    assert_eq!(request.messages[0].text(), "hi");
    assert_eq!(request.trigger, Trigger::Submit);
    assert_eq!(request.client_tools.unwrap()[0].name, "getUserTimezone");
    assert_eq!(request.body.get("foo"), Some(&json!(1)));
    assert!(!request.body.contains_key("clientTools"));
}

#[test]
fn absent_client_tools_differ_from_an_empty_list() {
    let absent = chat_frame(json!({"messages":[]}));
    let empty = chat_frame(json!({"messages":[],"clientTools":[]}));
    let tools = |t: &str| match parse_client_frame(t).unwrap() {
        ClientFrame::ChatRequest { request, .. } => request.client_tools,
        _ => panic!(),
    };
    assert_eq!(tools(&absent), None);
    assert_eq!(tools(&empty), Some(vec![]));
}

#[test]
fn malformed_chat_frames_are_reported_not_panicked() {
    let cases = [
        "not json",
        r#"{"type":"cf_agent_use_chat_request","id":"r","init":{"method":"POST","body":"{oops"}}"#,
        r#"{"type":"cf_agent_use_chat_request","id":"r","init":{"method":"POST","body":"{\"messages\":3}"}}"#,
        r#"{"type":"cf_agent_use_chat_request","id":5,"init":{}}"#,
        r#"{"type":"cf_agent_tool_result"}"#,
        r#"{"type":"cf_agent_tool_approval","toolCallId":"c","approved":"yes"}"#,
    ];
    for case in cases {
        assert!(parse_client_frame(case).is_err(), "{case}");
    }
}

#[test]
fn tool_result_error_state_gets_the_default_text() {
    let frame = parse_client_frame(
        r#"{"type":"cf_agent_tool_result","toolCallId":"c1","toolName":"x","output":null,"state":"output-error","autoContinue":false}"#,
    )
    .unwrap();
    let ClientFrame::ToolResult(result) = frame else {
        panic!()
    };
    assert_eq!(result.error_text.as_deref(), Some(DEFAULT_TOOL_ERROR));
    assert!(!result.auto_continue);
}

#[test]
fn over_long_ids_are_refused_and_long_probe_ids_dropped() {
    let long = "i".repeat(MAX_ID_BYTES + 1);
    let request = chat_frame(json!({"messages":[]})).replace("\"r1\"", &format!("\"{long}\""));
    assert!(matches!(
        parse_client_frame(&request),
        Err(FrameError::Invalid { reason, .. }) if reason.contains("too long")
    ));
    let fits = chat_frame(json!({"messages":[]}))
        .replace("\"r1\"", &format!("\"{}\"", "i".repeat(MAX_ID_BYTES)));
    assert!(parse_client_frame(&fits).is_ok());
    let cancel = json!({"type":"cf_agent_chat_request_cancel","id": long}).to_string();
    assert!(parse_client_frame(&cancel).is_err());
    let probe = json!({"type":"cf_agent_stream_resume_request","probeId": long}).to_string();
    assert_eq!(
        parse_client_frame(&probe).unwrap(),
        ClientFrame::ResumeRequest { probe_id: None }
    );
}

#[test]
fn a_get_method_chat_request_is_ignored() {
    let text =
        json!({"id":"r","type":"cf_agent_use_chat_request","init":{"method":"GET"}}).to_string();
    assert_eq!(parse_client_frame(&text).unwrap(), ClientFrame::NotPost);
}

#[test]
fn frames_of_other_types_are_told_apart_by_their_type_alone() {
    let big = format!(
        r#"{{"type":"cf_agent_state","state":[{}0]}}"#,
        "0,".repeat(10_000)
    );
    assert_eq!(
        parse_client_frame(&big),
        Err(FrameError::Unknown("cf_agent_state".into()))
    );
    assert_eq!(
        parse_client_frame(r#"{"messages":[1,2,3],"type":"cf_agent_chat_messages"}"#),
        Ok(ClientFrame::MessagesPush)
    );
    assert_eq!(
        parse_client_frame(r#"{"type":"rpc\u0041"}"#),
        Err(FrameError::Unknown("rpcA".into()))
    );
    assert_eq!(parse_client_frame(r#"{"type":5}"#), Err(FrameError::NoType));
    assert_eq!(
        parse_client_frame(r#"{"type":"cf_agent_chat_clear","type":"other"}"#),
        Err(FrameError::Unknown("other".into())),
        "a repeated type reads as its last, as a whole read does"
    );
    assert_eq!(parse_client_frame(r#"["type"]"#), Err(FrameError::NoType));
    assert_eq!(
        parse_client_frame(r#"{"type":"x"} tail"#),
        Err(FrameError::NotJson)
    );
    assert_eq!(parse_client_frame("not json"), Err(FrameError::NotJson));
}

#[test]
fn a_custom_body_over_its_bound_is_refused_as_sent_before_it_is_built() {
    let bounds = FrameBounds {
        max_body_bytes: 1_000,
        ..FrameBounds::NONE
    };
    let fits = chat_frame(json!({"messages":[], "note": "x".repeat(900)}));
    assert!(parse_client_frame_within(&fits, bounds).is_ok());
    // Compact it would fit; as sent (padded) it does not.
    let padded = json!({"id":"r1","type":"cf_agent_use_chat_request","init":{"method":"POST",
        "body": format!(r#"{{"messages":[],"note":[1{}]}}"#, " ".repeat(1_000))}})
    .to_string();
    match parse_client_frame_within(&padded, bounds) {
        Err(FrameError::TooLarge(reason)) => {
            assert!(reason.starts_with("custom body too large"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // Messages, trigger and client tools are not the custom body.
    let own = chat_frame(json!({"messages":[{"id":"u","role":"user","parts":[
        {"type":"text","text":"y".repeat(2_000)}]}], "trigger":"regenerate-message"}));
    let Ok(ClientFrame::ChatRequest { request, .. }) = parse_client_frame_within(&own, bounds)
    else {
        panic!()
    };
    assert_eq!(request.trigger, Trigger::Regenerate);
    assert!(request.body.is_empty());
}

#[test]
fn a_tool_result_output_over_its_bound_is_refused_before_it_is_built() {
    let bounds = FrameBounds {
        max_tool_result_bytes: 100,
        ..FrameBounds::NONE
    };
    let frame = |output: Value| {
        json!({"type":"cf_agent_tool_result","toolCallId":"c1","output":output}).to_string()
    };
    assert!(parse_client_frame_within(&frame(json!([1, 2, 3])), bounds).is_ok());
    match parse_client_frame_within(&frame(json!(vec![0; 100])), bounds) {
        Err(FrameError::TooLarge(reason)) => {
            assert!(
                reason.contains("tool result for c1 is too large"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_body_or_output_over_its_value_bound_is_refused_before_it_is_built() {
    let bounds = FrameBounds {
        shape: ShapeLimits {
            max_values: 100,
            max_depth: 8,
        },
        ..FrameBounds::NONE
    };
    let message =
        |data: Value| json!({"id":"u","role":"user","parts":[{"type":"data-x","data":data}]});
    let fits = chat_frame(json!({"messages":[message(json!(vec![0; 50]))]}));
    assert!(parse_client_frame_within(&fits, bounds).is_ok());
    let many = chat_frame(json!({"messages":[message(json!(vec![0; 200]))]}));
    assert_eq!(
        parse_client_frame_within(&many, bounds),
        Err(FrameError::TooLarge(
            "chat request body: too many JSON values (limit 100)".into()
        ))
    );
    let deep = chat_frame(json!({"messages":[message(json!([[[[[0]]]]]))]}));
    assert_eq!(
        parse_client_frame_within(&deep, bounds),
        Err(FrameError::TooLarge(
            "chat request body: JSON nested too deeply (limit 8 levels)".into()
        ))
    );
    // A custom body counts too.
    let custom = chat_frame(json!({"messages":[], "junk": vec![0; 200]}));
    assert!(matches!(
        parse_client_frame_within(&custom, bounds),
        Err(FrameError::TooLarge(_))
    ));
    let result =
        json!({"type":"cf_agent_tool_result","toolCallId":"c1","output":vec![0; 200]}).to_string();
    assert_eq!(
        parse_client_frame_within(&result, bounds),
        Err(FrameError::TooLarge(
            "tool result for c1: too many JSON values (limit 100)".into()
        ))
    );
    // A frame read whole (its type repeated) is counted before it is built.
    let repeated = format!(
        r#"{{"type":"cf_agent_tool_result","type":"cf_agent_tool_result","junk":{}}}"#,
        json!(vec![0; 200])
    );
    assert_eq!(
        parse_client_frame_within(&repeated, bounds),
        Err(FrameError::TooLarge(
            "frame: too many JSON values (limit 100)".into()
        ))
    );
}

#[test]
fn fields_a_chat_frame_does_not_use_are_skipped_and_its_id_read_alone() {
    let junk = format!("[{}0]", "[0],".repeat(10_000));
    let cancel = format!(r#"{{"type":"cf_agent_chat_request_cancel","junk":{junk},"id":"r9"}}"#);
    assert_eq!(
        parse_client_frame(&cancel),
        Ok(ClientFrame::Cancel { id: "r9".into() })
    );
    let broken = format!(r#"{{"id":"r8","junk":{junk},"type":"cf_agent_tool_result"}}"#);
    assert!(parse_client_frame(&broken).is_err());
    assert_eq!(frame_id(&broken).as_deref(), Some("r8"));
    assert_eq!(frame_id(r#"{"id":5}"#), None);
    assert_eq!(
        parse_client_frame(r#"{"type":"cf_agent_chat_clear"} x"#),
        Err(FrameError::NotJson)
    );
}

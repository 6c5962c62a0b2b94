//! Golden frames of the channel in both directions, and the reason each
//! malformed shape is refused with.

use super::*;
use crate::protocol::client::MAX_ID_BYTES;
use serde_json::json;

fn clock_tool() -> Vec<ClientToolSchema> {
    vec![ClientToolSchema {
        name: "parent_clock".into(),
        description: Some("time".into()),
        parameters: Some(json!({"type": "object", "properties": {}})),
    }]
}

fn reason(error: FrameError) -> String {
    match error {
        FrameError::Invalid { reason, .. } => reason,
        other => other.to_string(),
    }
}

#[test]
fn parent_frames_keep_the_exact_json_of_the_wire() {
    let message = UIMessage::user_text("m1", "hi");
    let chat = ParentFrame::Chat(RpcChat {
        message: ChatMessage::Message(message.clone()),
        client_tools: clock_tool(),
        executor: true,
    });
    assert_eq!(
        chat.to_json(),
        json!({"type": "cf_agent_rpc_chat", "message": message,
               "clientTools": clock_tool(), "executor": true})
        .to_string()
    );
    let text = ParentFrame::Chat(RpcChat {
        message: "read the clock".into(),
        client_tools: vec![],
        executor: false,
    });
    assert_eq!(
        text.to_json(),
        r#"{"type":"cf_agent_rpc_chat","message":"read the clock","clientTools":[],"executor":false}"#
    );
    let result = |result| {
        ParentFrame::ToolResult(RpcToolResult {
            call_id: 7,
            tool_call_id: "call_1".into(),
            result,
        })
        .to_json()
    };
    assert_eq!(
        result(Ok(json!({"now": "12:00"}))),
        r#"{"type":"cf_agent_rpc_tool_result","callId":7,"toolCallId":"call_1","output":{"now":"12:00"}}"#
    );
    assert_eq!(
        result(Ok(Value::Null)),
        r#"{"type":"cf_agent_rpc_tool_result","callId":7,"toolCallId":"call_1","output":null}"#
    );
    assert_eq!(
        result(Err("refused".into())),
        r#"{"type":"cf_agent_rpc_tool_result","callId":7,"toolCallId":"call_1","error":"refused"}"#
    );
    assert_eq!(
        ParentFrame::Cancel { id: "r1".into() }.to_json(),
        r#"{"type":"cf_agent_chat_request_cancel","id":"r1"}"#
    );
}

#[test]
fn every_parent_frame_parses_back_to_itself() {
    let frames = [
        ParentFrame::Chat(RpcChat {
            message: ChatMessage::Message(UIMessage::user_text("m1", "hi")),
            client_tools: clock_tool(),
            executor: true,
        }),
        ParentFrame::Chat(RpcChat {
            message: "plain text".into(),
            client_tools: vec![],
            executor: false,
        }),
        ParentFrame::Chat(RpcChat {
            message: ChatMessage::Messages(vec![
                UIMessage::user_text("m1", "first"),
                UIMessage::user_text("m2", "second"),
            ]),
            client_tools: vec![],
            executor: false,
        }),
        ParentFrame::ToolResult(RpcToolResult {
            call_id: 3,
            tool_call_id: "call_1".into(),
            result: Ok(Value::Null),
        }),
        ParentFrame::ToolResult(RpcToolResult {
            call_id: 4,
            tool_call_id: "call_2".into(),
            result: Err("no".into()),
        }),
        ParentFrame::Cancel { id: "r1".into() },
    ];
    for frame in frames {
        assert_eq!(parse_parent_frame(&frame.to_json()), Ok(frame));
    }
}

#[test]
fn a_chat_frame_without_tools_or_executor_has_none() {
    let frame = parse_parent_frame(r#"{"type":"cf_agent_rpc_chat","message":"hi"}"#);
    assert_eq!(
        frame,
        Ok(ParentFrame::Chat(RpcChat {
            message: "hi".into(),
            client_tools: vec![],
            executor: false,
        }))
    );
}

#[test]
fn malformed_parent_frames_are_refused_with_the_reason() {
    let long = "i".repeat(MAX_ID_BYTES + 1);
    let cases = [
        ("not json".to_string(), "not valid JSON"),
        (r#"["cf_agent_rpc_chat"]"#.into(), "no string `type`"),
        (r#"{"message":"hi"}"#.into(), "no string `type`"),
        (r#"{"type":"cf_agent_use_chat_request","id":"r"}"#.into(), "unknown frame type"),
        (r#"{"type":"cf_agent_rpc_chat"}"#.into(), "`message` is missing"),
        (r#"{"type":"cf_agent_rpc_chat","message":5}"#.into(), "string or a message object"),
        (r#"{"type":"cf_agent_rpc_chat","message":{"id":"m"}}"#.into(), "`message`:"),
        (r#"{"type":"cf_agent_rpc_chat","message":"hi","clientTools":{}}"#.into(), "`clientTools`"),
        (r#"{"type":"cf_agent_rpc_chat","message":"hi","clientTools":[{"description":"x"}]}"#.into(), "`clientTools`"),
        (r#"{"type":"cf_agent_rpc_chat","message":"hi","executor":"yes"}"#.into(), "`executor` must be a boolean"),
        (r#"{"type":"cf_agent_rpc_tool_result","toolCallId":"c","output":1}"#.into(), "`callId` is missing"),
        (r#"{"type":"cf_agent_rpc_tool_result","callId":"1","toolCallId":"c","output":1}"#.into(), "`callId` must be"),
        (r#"{"type":"cf_agent_rpc_tool_result","callId":-1,"toolCallId":"c","output":1}"#.into(), "`callId` must be"),
        (r#"{"type":"cf_agent_rpc_tool_result","callId":1,"output":1}"#.into(), "`toolCallId` is missing"),
        (r#"{"type":"cf_agent_rpc_tool_result","callId":1,"toolCallId":"","output":1}"#.into(), "`toolCallId` is empty"),
        (json!({"type":"cf_agent_rpc_tool_result","callId":1,"toolCallId":long,"output":1}).to_string(), "too long"),
        (r#"{"type":"cf_agent_rpc_tool_result","callId":1,"toolCallId":"c"}"#.into(), "needs `output` or `error`"),
        (r#"{"type":"cf_agent_rpc_tool_result","callId":1,"toolCallId":"c","error":{}}"#.into(), "`error` must be a string"),
        (r#"{"type":"cf_agent_rpc_tool_result","callId":1,"toolCallId":"c","output":1,"error":"x"}"#.into(), "both"),
        (r#"{"type":"cf_agent_chat_request_cancel"}"#.into(), "`id` is missing"),
        (json!({"type":"cf_agent_chat_request_cancel","id":long}).to_string(), "too long"),
    ];
    for (text, expected) in cases {
        let error = parse_parent_frame(&text).expect_err(&text);
        let reason = reason(error);
        assert!(reason.contains(expected), "{text}: {reason}");
    }
}

#[test]
fn child_frames_keep_the_exact_json_of_the_wire() {
    assert_eq!(
        rpc_started("req-1"),
        json!({"type": "cf_agent_rpc_started", "requestId": "req-1"}).to_string()
    );
    let input = json!({"tz": "UTC"});
    assert_eq!(
        rpc_tool_call(2, "call_1", "parent_clock", &input),
        json!({"type": "cf_agent_rpc_tool_call", "callId": 2, "toolCallId": "call_1",
               "toolName": "parent_clock", "input": input})
        .to_string()
    );
}

#[test]
fn child_frames_parse_into_what_the_parent_acts_on() {
    assert_eq!(
        parse_child_frame(&rpc_started("req-1")),
        Ok(ChildFrame::Started {
            request_id: "req-1".into()
        })
    );
    assert_eq!(
        parse_child_frame(&rpc_tool_call(2, "call_1", "parent_clock", &json!({}))),
        Ok(ChildFrame::ToolCall(RpcToolCall {
            call_id: 2,
            tool_call_id: "call_1".into(),
            tool_name: "parent_clock".into(),
            input: json!({}),
        }))
    );
    let chunk = crate::protocol::ResponseFrame::new("req-1", r#"{"type":"start"}"#).to_json();
    assert_eq!(
        parse_child_frame(&chunk),
        Ok(ChildFrame::Response(ChannelResponse {
            id: "req-1".into(),
            body: r#"{"type":"start"}"#.into(),
            done: false,
            error: false,
            outcome: None,
        }))
    );
    let terminal = crate::protocol::ResponseFrame {
        done: true,
        outcome: Some(Outcome::Completed),
        ..crate::protocol::ResponseFrame::new("req-1", "")
    }
    .to_json();
    let Ok(ChildFrame::Response(response)) = parse_child_frame(&terminal) else {
        panic!("a terminal response frame")
    };
    assert!(response.done && !response.error);
    assert_eq!(response.outcome, Some(Outcome::Completed));
    let refused = crate::protocol::server::chat_error("too many client tools");
    assert_eq!(
        parse_child_frame(&refused),
        Ok(ChildFrame::Refused {
            error: "too many client tools".into()
        })
    );
    let transcript = crate::protocol::server::chat_messages(&[], false);
    assert_eq!(parse_child_frame(&transcript), Ok(ChildFrame::Other));
}

#[test]
fn malformed_child_frames_are_refused_with_the_reason() {
    let cases = [
        ("", "not valid JSON"),
        (
            r#"{"type":"cf_agent_rpc_started"}"#,
            "`requestId` is missing",
        ),
        (
            r#"{"type":"cf_agent_rpc_tool_call","toolCallId":"c","toolName":"t","input":{}}"#,
            "`callId` is missing",
        ),
        (
            r#"{"type":"cf_agent_rpc_tool_call","callId":1,"toolCallId":"c","toolName":"t"}"#,
            "`input` is missing",
        ),
        (
            r#"{"type":"cf_agent_rpc_tool_call","callId":1,"toolCallId":"c","toolName":3,"input":{}}"#,
            "`toolName` must be a string",
        ),
        (
            r#"{"type":"cf_agent_use_chat_response","id":"r","body":""}"#,
            "`done` is missing",
        ),
        (
            r#"{"type":"cf_agent_use_chat_response","id":"r","done":false}"#,
            "`body` is missing",
        ),
        (
            r#"{"type":"cf_agent_use_chat_response","id":"r","body":"","done":true,"outcome":"later"}"#,
            "`outcome`",
        ),
        (r#"{"type":"cf_agent_chat_error"}"#, "`error` is missing"),
    ];
    for (text, expected) in cases {
        let error = parse_child_frame(text).expect_err(text);
        let reason = reason(error);
        assert!(reason.contains(expected), "{text}: {reason}");
    }
}

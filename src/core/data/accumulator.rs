//! Builds the assistant `UIMessage` from the chunks of its stream, with the
//! tool-part state machine of the AI SDK (§3.2 / §3.4 of the protocol facts).
//! The same code rebuilds a partial message from a replayed chunk log.

use serde_json::{Map, Value};

use crate::protocol::{
    Approval, ClientToolSchema, Part, TextPart, TextState, ToolPart, ToolState, UIMessage,
    UIMessageChunk,
};

/// The error a tool call gets when its run died before a result was recorded.
pub const INTERRUPTED_TOOL_ERROR: &str =
    "The tool call was interrupted before a result was recorded.";

/// Applies one chunk to `message`. Returns `false` when the chunk named a tool
/// call this message does not hold (a cross-message update for the caller).
pub fn apply_chunk(message: &mut UIMessage, chunk: &UIMessageChunk) -> bool {
    use UIMessageChunk as C;
    match chunk {
        C::Start {
            message_metadata: Some(meta),
            ..
        } => merge_metadata(message, meta),
        C::Finish {
            message_metadata: Some(meta),
            ..
        } => merge_metadata(message, meta),
        C::Start { .. } | C::Finish { .. } => {}
        C::MessageMetadata { message_metadata } => merge_metadata(message, message_metadata),
        C::StartStep => message.parts.push(Part::StepStart),
        C::FinishStep | C::Abort { .. } | C::Error { .. } => {}
        C::TextStart { .. } => message.parts.push(Part::Text(TextPart::streaming())),
        C::TextDelta { delta, .. } => append_text(message, delta, false),
        C::TextEnd { .. } => close_last(message, false),
        C::ReasoningStart { .. } => message.parts.push(Part::Reasoning(TextPart::streaming())),
        C::ReasoningDelta { delta, .. } => append_text(message, delta, true),
        C::ReasoningEnd { .. } => close_last(message, true),
        C::ToolInputStart {
            tool_call_id,
            tool_name,
        } => {
            if !message.has_tool_call(tool_call_id) {
                message.parts.push(Part::Tool(ToolPart::new(
                    tool_call_id,
                    tool_name,
                    ToolState::InputStreaming,
                )));
            }
        }
        C::ToolInputDelta { .. } => {}
        C::ToolInputAvailable {
            tool_call_id,
            tool_name,
            input,
            provider_executed,
        } => match message.tool_part_mut(tool_call_id) {
            Some(part) => {
                if part.state == ToolState::InputStreaming {
                    part.state = ToolState::InputAvailable;
                    part.input = Some(normalize_input(input));
                    part.provider_executed = *provider_executed;
                }
            }
            None => {
                let mut part = ToolPart::new(tool_call_id, tool_name, ToolState::InputAvailable);
                part.input = Some(normalize_input(input));
                part.provider_executed = *provider_executed;
                message.parts.push(Part::Tool(part));
            }
        },
        C::ToolInputError {
            tool_call_id,
            tool_name,
            input,
            error_text,
        } => {
            if message.tool_part_mut(tool_call_id).is_none() {
                message.parts.push(Part::Tool(ToolPart::new(
                    tool_call_id,
                    tool_name,
                    ToolState::InputStreaming,
                )));
            }
            if let Some(part) = message.tool_part_mut(tool_call_id) {
                if !part.state.is_settled() {
                    part.input = Some(normalize_input(input));
                    part.set_error(error_text.clone());
                }
            }
        }
        C::ToolApprovalRequest {
            approval_id,
            tool_call_id,
        } => {
            let Some(part) = message.tool_part_mut(tool_call_id) else {
                return false;
            };
            if matches!(
                part.state,
                ToolState::InputStreaming | ToolState::InputAvailable
            ) {
                part.state = ToolState::ApprovalRequested;
                part.approval = Some(Approval {
                    id: approval_id.clone(),
                    approved: None,
                    reason: None,
                });
            }
        }
        C::ToolOutputAvailable {
            tool_call_id,
            output,
        } => {
            let Some(part) = message.tool_part_mut(tool_call_id) else {
                return false;
            };
            settle_output(part, output);
        }
        C::ToolOutputError {
            tool_call_id,
            error_text,
        } => {
            let Some(part) = message.tool_part_mut(tool_call_id) else {
                return false;
            };
            if !part.state.is_settled() {
                part.set_error(error_text.clone());
            }
        }
        C::ToolOutputDenied { tool_call_id } => {
            let Some(part) = message.tool_part_mut(tool_call_id) else {
                return false;
            };
            if !part.state.is_settled() && part.state != ToolState::ApprovalResponded {
                part.state = ToolState::OutputDenied;
            }
        }
    }
    true
}

/// Writes a tool output unless the part already has one (first write wins).
pub fn settle_output(part: &mut ToolPart, output: &Value) -> bool {
    if part.state.is_settled() {
        return false;
    }
    part.state = ToolState::OutputAvailable;
    part.output = Some(output.clone());
    part.error_text = None;
    true
}

fn merge_metadata(message: &mut UIMessage, extra: &Value) {
    let Value::Object(extra) = extra else { return };
    let mut merged = match message.metadata.take() {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    merged.extend(extra.clone());
    message.metadata = Some(Value::Object(merged));
}

fn append_text(message: &mut UIMessage, delta: &str, reasoning: bool) {
    let last = message
        .parts
        .iter_mut()
        .rev()
        .find_map(|p| match (p, reasoning) {
            (Part::Text(t), false) | (Part::Reasoning(t), true) => Some(t),
            _ => None,
        });
    match last {
        Some(t) if t.state == Some(TextState::Streaming) => t.text.push_str(delta),
        _ => {
            let mut part = TextPart::streaming();
            part.text.push_str(delta);
            message.parts.push(if reasoning {
                Part::Reasoning(part)
            } else {
                Part::Text(part)
            });
        }
    }
}

fn close_last(message: &mut UIMessage, reasoning: bool) {
    for part in message.parts.iter_mut().rev() {
        match (part, reasoning) {
            (Part::Text(t), false) | (Part::Reasoning(t), true) => {
                t.state = Some(TextState::Done);
                return;
            }
            _ => {}
        }
    }
}

/// Marks every still-streaming text or reasoning part done (a cut stream).
pub fn close_dangling_text(message: &mut UIMessage) {
    for part in &mut message.parts {
        if let Part::Text(t) | Part::Reasoning(t) = part {
            if t.state == Some(TextState::Streaming) {
                t.state = Some(TextState::Done);
            }
        }
    }
}

/// A server tool whose run died (with the isolate, or with a cut stream)
/// gets an error result; calls waiting for a person (`client_tools`) are left
/// as they are.
pub fn repair_dead_server_calls(client_tools: &[ClientToolSchema], message: &mut UIMessage) {
    for part in &mut message.parts {
        let Part::Tool(tool) = part else { continue };
        let client_call = client_tools.iter().any(|t| t.name == tool.tool_name);
        let dead = match tool.state {
            ToolState::InputStreaming => true,
            ToolState::InputAvailable => !client_call,
            _ => false,
        };
        if dead {
            tool.set_error(INTERRUPTED_TOOL_ERROR);
        }
    }
}

/// Tool input is always a plain object: a JSON-object string is parsed, anything else is `{}`.
pub fn normalize_input(input: &Value) -> Value {
    match input {
        Value::Object(_) => input.clone(),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    }
}

/// True when the message has something worth persisting (more than step markers).
pub fn has_content(message: &UIMessage) -> bool {
    message.parts.iter().any(|p| !matches!(p, Part::StepStart))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn build(chunks: &[UIMessageChunk]) -> UIMessage {
        let mut m = UIMessage::assistant("a1");
        for c in chunks {
            apply_chunk(&mut m, c);
        }
        m
    }

    #[test]
    fn text_stream_builds_one_done_text_part_after_a_step_start() {
        use UIMessageChunk::*;
        let m = build(&[
            StartStep,
            TextStart { id: "t".into() },
            TextDelta {
                id: "t".into(),
                delta: "Hel".into(),
            },
            TextDelta {
                id: "t".into(),
                delta: "lo".into(),
            },
            TextEnd { id: "t".into() },
        ]);
        assert_eq!(
            serde_json::to_value(&m.parts).unwrap(),
            json!([{"type":"step-start"},{"type":"text","text":"Hello","state":"done"}])
        );
    }

    #[test]
    fn tool_call_moves_through_input_to_output_and_ignores_later_writes() {
        use UIMessageChunk::*;
        let m = build(&[
            ToolInputStart {
                tool_call_id: "c1".into(),
                tool_name: "get_weather".into(),
            },
            ToolInputAvailable {
                tool_call_id: "c1".into(),
                tool_name: "get_weather".into(),
                input: json!("{\"city\":\"Paris\"}"),
                provider_executed: None,
            },
            ToolOutputAvailable {
                tool_call_id: "c1".into(),
                output: json!({"tempC":21}),
            },
            ToolOutputError {
                tool_call_id: "c1".into(),
                error_text: "late".into(),
            },
        ]);
        let part = m.tool_parts().next().unwrap();
        assert_eq!(part.state, ToolState::OutputAvailable);
        assert_eq!(part.input, Some(json!({"city":"Paris"})));
        assert_eq!(part.output, Some(json!({"tempC":21})));
    }

    #[test]
    fn approval_request_marks_the_part_and_keeps_its_id() {
        use UIMessageChunk::*;
        let m = build(&[
            ToolInputAvailable {
                tool_call_id: "c1".into(),
                tool_name: "delete_file".into(),
                input: json!({"path":"a"}),
                provider_executed: None,
            },
            ToolApprovalRequest {
                approval_id: "ap1".into(),
                tool_call_id: "c1".into(),
            },
        ]);
        let part = m.tool_parts().next().unwrap();
        assert_eq!(part.state, ToolState::ApprovalRequested);
        assert_eq!(part.approval.as_ref().unwrap().id, "ap1");
    }

    #[test]
    fn output_for_a_call_in_another_message_is_reported_as_cross_message() {
        let mut m = UIMessage::assistant("a2");
        let applied = apply_chunk(
            &mut m,
            &UIMessageChunk::ToolOutputAvailable {
                tool_call_id: "old".into(),
                output: json!(1),
            },
        );
        assert!(!applied);
    }

    #[test]
    fn non_object_inputs_normalize_to_an_empty_object() {
        for v in [
            json!(null),
            json!(""),
            json!([1]),
            json!(3),
            json!("not json"),
        ] {
            assert_eq!(normalize_input(&v), json!({}));
        }
    }
}

//! How much a client may send and how long a model may stall: configurable
//! bounds, each answered with a clear error instead of a crash or a hang.
//! Also the shape of a client tool list (names providers accept, schema
//! sizes), refused as a whole when one entry is wrong.

use crate::protocol::client::MAX_ID_BYTES;
use crate::protocol::gate::{self, Budget};
use crate::protocol::{ChatRequest, ClientToolSchema, ToolResult, UIMessage};

/// Longest tool name providers accept (`^[A-Za-z0-9_-]{1,64}$`).
pub const MAX_TOOL_NAME_BYTES: usize = 64;

/// Whether providers accept `name` as a tool name: 1 to 64 of `A-Z a-z 0-9 _ -`.
pub fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest incoming WebSocket frame, in bytes.
    pub max_frame_bytes: usize,
    /// Messages in one chat request.
    pub max_messages: usize,
    /// Parts in one message of a chat request.
    pub max_parts: usize,
    /// Size of one tool result's output (serialized), in bytes.
    pub max_tool_result_bytes: usize,
    /// Client tool schemas in one request.
    pub max_client_tools: usize,
    /// One client tool (name, description and parameters, as JSON), in bytes.
    pub max_client_tool_bytes: usize,
    /// A whole client tool list (as JSON), in bytes. It is stored and sent to
    /// the model on every turn, so it stays well under a stored row's 2 MB.
    pub max_client_tools_bytes: usize,
    /// Turns waiting in the queue (the running one not counted).
    pub max_pending_turns: usize,
    /// A model stream with no event for this long fails the turn (0: never).
    pub model_stall_timeout_ms: u64,
    /// A model call still streaming after this long fails the turn (0: never).
    pub model_call_timeout_ms: u64,
    /// Text, reasoning and tool-argument bytes the model may stream in one
    /// turn; past it the turn fails (0: no limit). The answer is stored as
    /// one row, which must stay under 2 MB.
    pub max_model_stream_bytes: usize,
    /// Tool calls of one model step that are run (or routed); the calls
    /// past it are input errors the model reads (0: no limit).
    pub max_tool_calls_per_step: usize,
    /// The `url` of one `file` part in a message (a `data:` URL holds the
    /// file, base64-encoded), in bytes. It is sent to the model with every
    /// request that includes its message.
    pub max_file_part_bytes: usize,
    /// The text of one message (its `text` parts together), in bytes. A
    /// stored message is sent to the model with every later request.
    pub max_message_text_bytes: usize,
    /// The custom body of one chat request or submission (its keys other
    /// than `messages`, `trigger` and `clientTools`, as JSON), in bytes. It
    /// is kept for later turns and shown to `before_turn`.
    pub max_body_bytes: usize,
    /// Chat requests one connection may make in a minute; past it a request
    /// is refused on its id (0: no limit). Each may start a model turn.
    pub max_requests_per_minute: usize,
    /// Turns an agent may be asked for in a minute (0: no limit): its
    /// connections' chat requests together, parents' `chat()` calls, named
    /// callers' submissions and continuations asked for over RPC. The
    /// agent's own code is not counted.
    pub max_agent_requests_per_minute: usize,
    /// Tokens the agent's model calls may spend in one clock hour (0: no
    /// limit), as the provider reports them (estimated from the bytes sent
    /// and streamed when it does not); past it a turn is refused on its
    /// request id, and a running turn ends before its next model call.
    pub max_agent_tokens_per_hour: u64,
    /// Tokens the agent's model calls may spend in one UTC day (0: no limit).
    pub max_agent_tokens_per_day: u64,
    /// Tokens the turns one caller started may spend in one UTC day (0: no
    /// limit). The caller is who started the turn: a tab's client (its
    /// address, as its request rate is kept), a named caller, a parent, the
    /// agent's own code; past it that caller's next turn is refused.
    pub max_caller_tokens_per_day: u64,
    /// Tokens the turns one connection (a socket) started may spend while
    /// it is open (0: no limit).
    pub max_connection_tokens: u64,
    /// Tokens one turn may spend (0: no limit); once spent, its next model
    /// call is refused and the turn ends with the error.
    pub max_turn_tokens: u64,
    /// Sockets (tabs and sub-agent channels) one agent keeps open at once;
    /// past it a WebSocket upgrade is refused with 429 (0: no limit).
    pub max_connections: usize,
    /// Messages an agent keeps stored; past it the oldest are deleted
    /// (0: keep every message).
    pub max_stored_messages: usize,
    /// Calls to child agents (a sub-agent `chat()`, an `AgentStub`
    /// submission or continuation) one turn's tools may have in flight
    /// together; a call past it is refused at once with an error the tool
    /// returns to the model (0: no limit).
    pub max_child_calls_per_turn: usize,
    /// Calls to child agents the whole agent may have in flight together
    /// (its turns, routes, alarm and schedules; 0: no limit).
    pub max_child_calls_per_agent: usize,
    /// How many delegated calls deep a turn may be and still delegate: a
    /// tab's or the agent's own turn is at depth 0, a turn a parent's
    /// `chat()` started at the parent's depth plus one (a parent that sends
    /// none, such as a Think agent, counts as depth 0). A turn at this depth
    /// calls no further child: the call fails at once as a tool error the
    /// model reads (0: no limit).
    pub max_delegation_depth: usize,
    /// JSON values (each array, object, string, number, boolean, null) in
    /// one chat request's body, one tool result's output, or the messages
    /// of one submission, counted in the text before any is built: a value
    /// costs the agent tens of bytes however short its text.
    pub max_message_values: usize,
    /// How deeply those values may nest.
    pub max_message_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: gate::CHAT.max_bytes,
            max_messages: 2_000,
            max_parts: 500,
            max_tool_result_bytes: 1024 * 1024,
            max_client_tools: 128,
            max_client_tool_bytes: 32 * 1024,
            max_client_tools_bytes: 256 * 1024,
            max_pending_turns: 32,
            model_stall_timeout_ms: 120_000,
            model_call_timeout_ms: 600_000,
            max_model_stream_bytes: 1_950_000,
            max_tool_calls_per_step: 32,
            max_file_part_bytes: 1024 * 1024,
            max_message_text_bytes: 1024 * 1024,
            max_body_bytes: 64 * 1024,
            max_requests_per_minute: 60,
            max_agent_requests_per_minute: 600,
            max_agent_tokens_per_hour: 0,
            max_agent_tokens_per_day: 0,
            max_caller_tokens_per_day: 0,
            max_connection_tokens: 0,
            max_turn_tokens: 0,
            max_connections: 100,
            max_stored_messages: 0,
            max_child_calls_per_turn: 4,
            max_child_calls_per_agent: 16,
            max_delegation_depth: 3,
            max_message_values: gate::CHAT.max_values,
            max_message_depth: gate::CHAT.max_depth,
        }
    }
}

/// Why a turn `depth` delegated calls deep may not hand work to another
/// agent under `max_depth` (`Limits::max_delegation_depth`, 0: no limit),
/// or `None` when it may.
pub fn delegation_refusal(depth: u32, max_depth: usize) -> Option<String> {
    if max_depth == 0 || (depth as usize) < max_depth {
        return None;
    }
    Some(format!(
        "delegation too deep: this turn was asked for through {depth} delegated calls \
         (limit {max_depth}, MAX_DELEGATION_DEPTH); it may not hand work to another agent, \
         answer without delegating"
    ))
}

impl Limits {
    /// Why a turn `depth` delegated calls deep calls no child agent, or
    /// `None` (see [`delegation_refusal`]).
    pub fn delegation_refusal(&self, depth: u32) -> Option<String> {
        delegation_refusal(depth, self.max_delegation_depth)
    }

    /// The gate's budget of a chat request under these limits (a tab's
    /// frame, `chat()` over RPC, a submission's messages): `gate::CHAT`
    /// with the defaults.
    pub fn budget(&self) -> Budget {
        Budget {
            max_bytes: self.max_frame_bytes,
            max_values: self.max_message_values,
            max_depth: self.max_message_depth,
            ..gate::CHAT
        }
    }

    /// The gate's budget of one tool result's output under these limits.
    pub fn tool_result_budget(&self) -> Budget {
        Budget {
            name: "tool result",
            max_bytes: self.max_tool_result_bytes,
            ..self.budget()
        }
    }

    /// The values and nesting an input's text may hold
    /// (`max_message_values`, `max_message_depth`).
    pub fn shape(&self) -> crate::protocol::json_shape::ShapeLimits {
        crate::protocol::json_shape::ShapeLimits {
            max_values: self.max_message_values,
            max_depth: self.max_message_depth,
        }
    }

    /// Refuses the JSON text of an input (`what`: how the error names it)
    /// holding more values or nesting than the limits allow, before any
    /// of it is built. Text that is not JSON is left to its parser.
    pub fn check_json_shape(&self, text: &str, what: &str) -> Result<(), String> {
        crate::protocol::json_shape::check(text, self.shape(), what)
    }

    /// An incoming frame of `bytes` bytes is not parsed when over the limit.
    pub fn check_frame_size(&self, bytes: usize) -> Result<(), String> {
        if bytes > self.max_frame_bytes {
            return Err(format!(
                "frame too large: {bytes} bytes (limit {})",
                self.max_frame_bytes
            ));
        }
        Ok(())
    }

    pub fn check_chat_request(&self, request: &ChatRequest) -> Result<(), String> {
        if request.messages.len() > self.max_messages {
            return Err(format!(
                "too many messages in one request: {} (limit {})",
                request.messages.len(),
                self.max_messages
            ));
        }
        self.check_body(&request.body)?;
        self.check_messages(&request.messages)?;
        self.check_client_tools(request.client_tools.as_deref().unwrap_or_default())
    }

    /// A custom body, measured as the JSON it is kept as.
    pub fn check_body(
        &self,
        body: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), String> {
        if body.is_empty() {
            return Ok(());
        }
        let bytes = serde_json::to_string(body).map_or(usize::MAX, |text| text.len());
        if bytes > self.max_body_bytes {
            return Err(format!(
                "custom body too large: {bytes} bytes (limit {})",
                self.max_body_bytes
            ));
        }
        Ok(())
    }

    /// Each message's parts and id (the count of messages is the caller's).
    pub fn check_messages(&self, messages: &[UIMessage]) -> Result<(), String> {
        if let Some(m) = messages.iter().find(|m| m.id.is_empty()) {
            return Err(format!("a {:?} message has an empty id", m.role));
        }
        if let Some(m) = messages.iter().find(|m| m.id.len() > MAX_ID_BYTES) {
            return Err(format!(
                "a message id is too long: {} bytes (limit {MAX_ID_BYTES})",
                m.id.len()
            ));
        }
        // After the id checks: the error quotes the id.
        if let Some(m) = messages.iter().find(|m| m.parts.len() > self.max_parts) {
            return Err(format!(
                "message {} has too many parts: {} (limit {})",
                m.id,
                m.parts.len(),
                self.max_parts
            ));
        }
        for m in messages {
            let text_bytes: usize = m
                .parts
                .iter()
                .map(|part| match part {
                    crate::protocol::Part::Text(t) => t.text.len(),
                    _ => 0,
                })
                .sum();
            if text_bytes > self.max_message_text_bytes {
                return Err(format!(
                    "the text of message {} is too long: {text_bytes} bytes (limit {})",
                    m.id, self.max_message_text_bytes
                ));
            }
            let unreadable = m.parts.iter().find_map(|part| match part {
                crate::protocol::Part::Other(map)
                    if map.get("type").and_then(serde_json::Value::as_str) == Some("file") =>
                {
                    super::file_urls::file_part_error(map)
                }
                _ => None,
            });
            if let Some(why) = unreadable {
                return Err(format!("a file in message {} {why}", m.id));
            }
            let too_large = m.parts.iter().find_map(|part| match part {
                crate::protocol::Part::Other(map)
                    if map.get("type").and_then(serde_json::Value::as_str) == Some("file") =>
                {
                    let bytes = map.get("url").and_then(serde_json::Value::as_str)?.len();
                    (bytes > self.max_file_part_bytes).then_some(bytes)
                }
                _ => None,
            });
            if let Some(bytes) = too_large {
                return Err(format!(
                    "a file in message {} is too large: {bytes} bytes (limit {})",
                    m.id, self.max_file_part_bytes
                ));
            }
        }
        Ok(())
    }

    pub fn check_tool_result(&self, result: &ToolResult) -> Result<(), String> {
        let size =
            result.output.to_string().len() + result.error_text.as_ref().map_or(0, String::len);
        self.check_tool_result_size(&result.tool_call_id, size)?;
        self.check_client_tools(result.client_tools.as_deref().unwrap_or_default())
    }

    /// A tool result's output (serialized) plus its error text, `size` bytes.
    pub fn check_tool_result_size(&self, tool_call_id: &str, size: usize) -> Result<(), String> {
        if size > self.max_tool_result_bytes {
            return Err(format!(
                "tool result for {tool_call_id} is too large: {size} bytes (limit {})",
                self.max_tool_result_bytes
            ));
        }
        Ok(())
    }

    /// A client tool list: how many, each name as providers accept it, each
    /// `parameters` a JSON object, each tool and the whole list within their
    /// byte limits. A name is quoted in the error only when it is short.
    pub fn check_client_tools(&self, tools: &[ClientToolSchema]) -> Result<(), String> {
        if tools.len() > self.max_client_tools {
            return Err(format!(
                "too many client tools: {} (limit {})",
                tools.len(),
                self.max_client_tools
            ));
        }
        let mut total = 0;
        for tool in tools {
            if tool.name.len() > MAX_TOOL_NAME_BYTES {
                return Err(format!(
                    "a client tool name is too long: {} bytes (limit {MAX_TOOL_NAME_BYTES})",
                    tool.name.len()
                ));
            }
            if !valid_tool_name(&tool.name) {
                return Err(format!(
                    "client tool name {:?} is not valid: use 1 to {MAX_TOOL_NAME_BYTES} of A-Z a-z 0-9 _ -",
                    tool.name
                ));
            }
            if tool
                .parameters
                .as_ref()
                .is_some_and(|p| !p.is_object() && !p.is_null())
            {
                return Err(format!(
                    "client tool {}: `parameters` must be a JSON schema object",
                    tool.name
                ));
            }
            let bytes = serde_json::to_string(tool).map_or(usize::MAX, |s| s.len());
            if bytes > self.max_client_tool_bytes {
                return Err(format!(
                    "client tool {} is too large: {bytes} bytes (limit {})",
                    tool.name, self.max_client_tool_bytes
                ));
            }
            total += bytes;
        }
        if total > self.max_client_tools_bytes {
            return Err(format!(
                "client tools are too large together: {total} bytes (limit {})",
                self.max_client_tools_bytes
            ));
        }
        Ok(())
    }
}

/// The request id of a frame too large to parse, when it leads the frame
/// (as `useAgentChat` writes it: `{"id":"…",…`).
pub fn leading_request_id(text: &str) -> Option<String> {
    let head = text.get(..text.len().min(256)).unwrap_or("");
    let rest = head.strip_prefix("{\"id\":\"")?;
    let end = rest.find('"')?;
    let id = &rest[..end];
    let plain = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    plain.then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_id_over_the_id_limit_is_refused() {
        let request = |id: String| ChatRequest {
            messages: vec![crate::protocol::UIMessage::user_text(id, "hi")],
            trigger: crate::protocol::Trigger::Submit,
            client_tools: None,
            body: Default::default(),
        };
        let limits = Limits::default();
        assert!(limits
            .check_chat_request(&request("m".repeat(MAX_ID_BYTES)))
            .is_ok());
        let error = limits
            .check_chat_request(&request("m".repeat(MAX_ID_BYTES + 1)))
            .unwrap_err();
        assert!(error.contains("too long"), "{error}");
    }

    #[test]
    fn tool_names_follow_what_providers_accept() {
        for good in ["getLocation", "a", "get_weather-2", &"x".repeat(64)] {
            assert!(valid_tool_name(good), "{good}");
        }
        for bad in ["", "bad name!", "a.b", "é", "a/b", &"x".repeat(65)] {
            assert!(!valid_tool_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_client_tool_list_with_a_bad_entry_is_refused_without_echoing_long_names() {
        let tool = |name: &str, parameters: Option<serde_json::Value>| ClientToolSchema {
            name: name.into(),
            description: None,
            parameters,
        };
        let limits = Limits::default();
        assert!(limits.check_client_tools(&[tool("ok", None)]).is_ok());
        let error = limits
            .check_client_tools(&[tool("bad name!", None)])
            .unwrap_err();
        assert!(error.contains("\"bad name!\" is not valid"), "{error}");
        let error = limits
            .check_client_tools(&[tool(&"n".repeat(200), None)])
            .unwrap_err();
        assert!(
            error.contains("too long: 200 bytes") && !error.contains("nnnn"),
            "{error}"
        );
        let error = limits
            .check_client_tools(&[tool("t", Some(serde_json::json!(5)))])
            .unwrap_err();
        assert!(error.contains("JSON schema object"), "{error}");
        let big = serde_json::json!({"description": "x".repeat(40 * 1024)});
        let error = limits
            .check_client_tools(&[tool("t", Some(big))])
            .unwrap_err();
        assert!(error.contains("client tool t is too large"), "{error}");
        let medium = serde_json::json!({"description": "x".repeat(30 * 1024)});
        let many: Vec<_> = (0..9)
            .map(|i| tool(&format!("t{i}"), Some(medium.clone())))
            .collect();
        let error = limits.check_client_tools(&many).unwrap_err();
        assert!(error.contains("too large together"), "{error}");
    }

    #[test]
    fn the_leading_id_of_an_oversized_frame_is_found_without_parsing_it() {
        assert_eq!(
            leading_request_id(r#"{"id":"Xy12Ab34","init":{"method":"POST","body":"…"#),
            Some("Xy12Ab34".into())
        );
        assert_eq!(leading_request_id(r#"{"type":"x","id":"a"}"#), None);
        assert_eq!(leading_request_id(r#"{"id":"<script>"}"#), None);
    }
}

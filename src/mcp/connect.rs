//! Connecting to a server as a step machine: `initialize`, the
//! `initialized` notification, then `tools/list` page by page (bounded in
//! pages, tools and bytes: a tool over its cap is left out as it is read,
//! see `tool_caps`), at the end of which the session is open and the
//! server's tools are known.
//! The host sends each request and hands its reply (or its failure) to
//! `on_reply`, which answers with the next request or the outcome.

use serde_json::Value;

use super::jsonrpc::{McpError, McpReply, McpRequest};
use super::session::Session;
use super::tool_caps::{self, LeftOut, MAX_TOOL_SPECS_BYTES};

/// The most `tools/list` pages read from one server.
pub const MAX_TOOL_PAGES: usize = 20;
/// The most tools kept from one server.
pub const MAX_TOOLS: usize = 512;

/// What a finished handshake learnt.
#[derive(Debug, Clone, PartialEq)]
pub struct Connected {
    /// The server's capabilities from `initialize`.
    pub capabilities: Value,
    pub instructions: Option<String>,
    /// The server's tools as it described them (`name`, `description`,
    /// `inputSchema`, …), each within its cap.
    pub tools: Vec<Value>,
    /// The tools left out, over a cap.
    pub left_out: Vec<LeftOut>,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum ConnectStep {
    Send(McpRequest),
    Done(Result<Connected, McpError>),
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Initializing,
    Notifying,
    Listing { pages: usize },
}

/// A handshake in progress (see the module header).
#[derive(Debug)]
pub struct Connect {
    phase: Phase,
    pending: McpRequest,
    capabilities: Value,
    instructions: Option<String>,
    tools: Vec<Value>,
    /// The JSON bytes of `tools`.
    tool_bytes: usize,
    left_out: Vec<LeftOut>,
}

impl Connect {
    fn new(phase: Phase, pending: &McpRequest) -> Connect {
        Connect {
            phase,
            pending: pending.clone(),
            capabilities: Value::Null,
            instructions: None,
            tools: Vec::new(),
            tool_bytes: 0,
            left_out: Vec::new(),
        }
    }

    /// Starts a handshake on `session` (any earlier session is forgotten);
    /// returns the first request to send.
    pub fn start(session: &mut Session) -> (Connect, McpRequest) {
        let request = session.initialize();
        (Connect::new(Phase::Initializing, &request), request)
    }

    /// Lists the tools again on an open `session` (after the server said
    /// they changed); returns the first request. The outcome's
    /// capabilities are `Null`: only its tools are new.
    pub fn relist(session: &mut Session) -> (Connect, McpRequest) {
        let request = session.list_tools(None);
        (Connect::new(Phase::Listing { pages: 1 }, &request), request)
    }

    /// The reply to the last request sent (or why there was none).
    pub fn on_reply(
        &mut self,
        session: &mut Session,
        reply: Result<McpReply, McpError>,
    ) -> ConnectStep {
        match self.advance(session, reply) {
            Ok(Some(request)) => {
                self.pending = request.clone();
                ConnectStep::Send(request)
            }
            Ok(None) => ConnectStep::Done(Ok(Connected {
                capabilities: std::mem::take(&mut self.capabilities),
                instructions: self.instructions.take(),
                tools: std::mem::take(&mut self.tools),
                left_out: std::mem::take(&mut self.left_out),
            })),
            Err(e) => {
                session.reset();
                ConnectStep::Done(Err(e))
            }
        }
    }

    fn advance(
        &mut self,
        session: &mut Session,
        reply: Result<McpReply, McpError>,
    ) -> Result<Option<McpRequest>, McpError> {
        let reply = reply?;
        match self.phase.clone() {
            Phase::Initializing => {
                let result = session.on_initialize(&self.pending, &reply)?;
                let capabilities = result.get("capabilities").cloned();
                self.capabilities = tool_caps::capabilities(capabilities.unwrap_or(Value::Null));
                self.instructions = result
                    .get("instructions")
                    .and_then(Value::as_str)
                    .map(tool_caps::instructions);
                self.phase = Phase::Notifying;
                Ok(Some(session.initialized()))
            }
            Phase::Notifying => {
                session.read(&self.pending, &reply)?;
                if self.capabilities.get("tools").is_none() {
                    // A server without tools (prompts or resources only).
                    return Ok(None);
                }
                self.phase = Phase::Listing { pages: 1 };
                Ok(Some(session.list_tools(None)))
            }
            Phase::Listing { pages } => {
                let mut result = session.read(&self.pending, &reply)?;
                let Some(Value::Array(tools)) = result.get_mut("tools").map(Value::take) else {
                    return Err(McpError::Malformed("tools/list has no tools array".into()));
                };
                let named = tools
                    .into_iter()
                    .filter(|tool| tool.get("name").and_then(Value::as_str).is_some())
                    .take(MAX_TOOLS - self.tools.len());
                let room = MAX_TOOL_SPECS_BYTES - self.tool_bytes;
                let (kept, bytes) =
                    tool_caps::keep_within(named.collect(), room, &mut self.left_out);
                self.tools.extend(kept);
                self.tool_bytes += bytes;
                let cursor = result.get("nextCursor").and_then(Value::as_str);
                match cursor {
                    Some(cursor)
                        if !cursor.is_empty()
                            && pages < MAX_TOOL_PAGES
                            && self.tools.len() < MAX_TOOLS
                            && self.tool_bytes < MAX_TOOL_SPECS_BYTES =>
                    {
                        self.phase = Phase::Listing { pages: pages + 1 };
                        Ok(Some(session.list_tools(Some(cursor))))
                    }
                    _ => Ok(None),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(request: &McpRequest, result: Value) -> Result<McpReply, McpError> {
        Ok(McpReply {
            status: 200,
            content_type: Some("text/event-stream".into()),
            session_id: Some("s1".into()),
            www_authenticate: None,
            body: format!(
                "event: message\ndata: {}\n\n",
                json!({"jsonrpc":"2.0","id":request.id,"result":result})
            ),
        })
    }

    fn accepted() -> Result<McpReply, McpError> {
        Ok(McpReply {
            status: 202,
            ..McpReply::default()
        })
    }

    fn sent(step: ConnectStep) -> McpRequest {
        match step {
            ConnectStep::Send(request) => request,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    #[test]
    fn a_handshake_lists_every_page_of_tools() {
        let mut session = Session::new("http://mcp/", &[]);
        let (mut connect, init) = Connect::start(&mut session);
        let init_result = json!({"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"instructions":"Be nice."});
        let notify = sent(connect.on_reply(&mut session, answer(&init, init_result)));
        assert!(notify
            .body
            .as_deref()
            .unwrap()
            .contains("notifications/initialized"));
        let first = sent(connect.on_reply(&mut session, accepted()));
        let page1 =
            json!({"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"c2"});
        let second = sent(connect.on_reply(&mut session, answer(&first, page1)));
        assert!(second
            .body
            .as_deref()
            .unwrap()
            .contains("\"cursor\":\"c2\""));
        let page2 = json!({"tools":[{"name":"b"},{"description":"no name"}]});
        let ConnectStep::Done(Ok(connected)) =
            connect.on_reply(&mut session, answer(&second, page2))
        else {
            panic!("expected the end of the handshake");
        };
        let names: Vec<_> = connected
            .tools
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(connected.instructions.as_deref(), Some("Be nice."));
        assert!(session.is_open());
        assert_eq!(session.session_id(), Some("s1"));
    }

    #[test]
    fn a_listing_keeps_the_tools_within_their_caps_and_notes_the_others() {
        let mut session = Session::new("http://mcp/", &[]);
        let (mut connect, first) = Connect::relist(&mut session);
        let huge = "x".repeat(3 * 1024 * 1024);
        let page = json!({"tools":[{"name":"good"},{"name":"huge","description":huge},{"name":"fine"}],"nextCursor":"2"});
        let second = sent(connect.on_reply(&mut session, answer(&first, page)));
        let page2 = json!({"tools":[{"name":"last"}]});
        let ConnectStep::Done(Ok(connected)) =
            connect.on_reply(&mut session, answer(&second, page2))
        else {
            panic!("expected the end of the listing");
        };
        let names: Vec<_> = connected.tools.iter().map(|t| t["name"].clone()).collect();
        assert_eq!(names, [json!("good"), json!("fine"), json!("last")]);
        assert_eq!(connected.left_out.len(), 1);
        assert_eq!(connected.left_out[0].name, "huge");
    }

    #[test]
    fn a_failed_step_ends_the_handshake_with_its_error_and_no_session() {
        let mut session = Session::new("http://mcp/", &[]);
        let (mut connect, _) = Connect::start(&mut session);
        let step = connect.on_reply(&mut session, Err(McpError::Unreachable("refused".into())));
        assert_eq!(
            step,
            ConnectStep::Done(Err(McpError::Unreachable("refused".into())))
        );
        assert!(!session.is_open());
    }

    #[test]
    fn a_relisting_reads_the_pages_on_the_open_session() {
        let mut session = Session::new("http://mcp/", &[]);
        let (mut connect, first) = Connect::relist(&mut session);
        assert!(first.body.as_deref().unwrap().contains("tools/list"));
        let page = json!({"tools":[{"name":"later"}]});
        let ConnectStep::Done(Ok(connected)) = connect.on_reply(&mut session, answer(&first, page))
        else {
            panic!("expected the end of the listing");
        };
        assert_eq!(connected.tools, vec![json!({"name":"later"})]);
        assert!(connected.left_out.is_empty());
    }

    #[test]
    fn a_server_without_tools_is_not_asked_for_them() {
        let mut session = Session::new("http://mcp/", &[]);
        let (mut connect, init) = Connect::start(&mut session);
        let result = json!({"protocolVersion":"2025-06-18","capabilities":{"prompts":{}}});
        sent(connect.on_reply(&mut session, answer(&init, result)));
        let ConnectStep::Done(Ok(connected)) = connect.on_reply(&mut session, accepted()) else {
            panic!("expected the end of the handshake");
        };
        assert!(connected.tools.is_empty());
    }
}

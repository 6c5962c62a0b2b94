//! One client session with one MCP server over Streamable HTTP: the
//! requests it sends (each a POST of one JSON-RPC message, with the
//! session id and protocol version the server gave), the ids it numbers
//! them with, and what it learns from the answers. No I/O: the host sends
//! what `Session` builds and hands the replies back.

use serde_json::{json, Value};

use super::jsonrpc::{
    notification_body, read_reply, request_body, McpError, McpReply, McpRequest, ReadReply,
};

/// The protocol version this client asks for.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Versions this client speaks, newest first (a server may answer with any).
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The client's name and version in `initialize`.
const CLIENT_NAME: &str = "durable-chat";

/// A session with one server (see the module header).
#[derive(Debug, Clone)]
pub struct Session {
    url: String,
    /// The author's headers (e.g. `Authorization`), sent with every request.
    headers: Vec<(String, String)>,
    session_id: Option<String>,
    protocol_version: Option<String>,
    next_id: u64,
    /// The server said its tool list changed since the last listing.
    tools_changed: bool,
}

impl Session {
    pub fn new(url: &str, headers: &[(String, String)]) -> Session {
        Session {
            url: url.to_string(),
            headers: headers.to_vec(),
            session_id: None,
            protocol_version: None,
            next_id: 1,
            tools_changed: false,
        }
    }

    /// Whether `initialize` succeeded (and the session was not ended since).
    pub fn is_open(&self) -> bool {
        self.protocol_version.is_some()
    }

    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Forgets the session (the server ended it, or it failed): the next
    /// exchange starts with `initialize`.
    pub fn reset(&mut self) {
        self.session_id = None;
        self.protocol_version = None;
    }

    /// Sends `Authorization: Bearer <token>` from now on (an OAuth sign-in's
    /// access token, in place of any earlier one).
    pub fn set_bearer(&mut self, token: &str) {
        self.headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        self.headers
            .push(("authorization".to_string(), format!("Bearer {token}")));
    }

    /// A copy of the session for a run of up to `count` requests made
    /// alongside others (a listing while calls go on): it numbers its
    /// requests from a block of ids this session skips, so no two requests
    /// in flight share an id.
    pub fn fork(&mut self, count: u64) -> Session {
        let fork = self.clone();
        self.next_id += count;
        fork
    }

    /// Takes the note that the server's tool list changed.
    pub fn take_tools_changed(&mut self) -> bool {
        std::mem::take(&mut self.tools_changed)
    }

    fn post(&mut self, body: String, id: Option<u64>) -> McpRequest {
        let mut headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            (
                "accept".to_string(),
                "application/json, text/event-stream".to_string(),
            ),
        ];
        if let Some(session) = &self.session_id {
            headers.push(("mcp-session-id".to_string(), session.clone()));
        }
        if let Some(version) = &self.protocol_version {
            headers.push(("mcp-protocol-version".to_string(), version.clone()));
        }
        headers.extend(self.headers.iter().cloned());
        McpRequest {
            method: "POST",
            url: self.url.clone(),
            headers,
            body: Some(body),
            id,
        }
    }

    /// A request for `method` with `params`, numbered.
    pub fn request(&mut self, method: &str, params: Value) -> McpRequest {
        let id = self.next_id;
        self.next_id += 1;
        self.post(request_body(id, method, params), Some(id))
    }

    /// The `initialize` request (a fresh session).
    pub fn initialize(&mut self) -> McpRequest {
        self.reset();
        self.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")},
            }),
        )
    }

    /// Reads the answer to `initialize`: the session id and protocol version
    /// are kept; the result (capabilities, instructions) is returned.
    pub fn on_initialize(
        &mut self,
        request: &McpRequest,
        reply: &McpReply,
    ) -> Result<Value, McpError> {
        let result = self.read(request, reply)?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::Malformed("initialize has no protocolVersion".into()))?;
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Err(McpError::Malformed(format!(
                "the server speaks protocol version {version}, which this client does not"
            )));
        }
        self.protocol_version = Some(version.to_string());
        self.session_id = reply.session_id.clone().filter(|s| !s.is_empty());
        Ok(result)
    }

    /// The `notifications/initialized` notification that opens the session.
    pub fn initialized(&mut self) -> McpRequest {
        self.post(notification_body("notifications/initialized"), None)
    }

    /// One page of `tools/list`.
    pub fn list_tools(&mut self, cursor: Option<&str>) -> McpRequest {
        let params = match cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        self.request("tools/list", params)
    }

    /// `tools/call` of the server's tool `name`.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> McpRequest {
        let arguments = match arguments {
            Value::Object(map) => Value::Object(map),
            Value::Null => json!({}),
            other => json!({"input": other}),
        };
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// The `DELETE` that ends the session on the server, if it has an id.
    pub fn end(&self) -> Option<McpRequest> {
        let session = self.session_id.clone()?;
        let mut headers = vec![("mcp-session-id".to_string(), session)];
        headers.extend(self.headers.iter().cloned());
        Some(McpRequest {
            method: "DELETE",
            url: self.url.clone(),
            headers,
            body: None,
            id: None,
        })
    }

    /// Reads the reply to `request`: its result (`Null` for a notification).
    /// A session the server ended is forgotten; a list-changed notification
    /// on the way is noted.
    pub fn read(&mut self, request: &McpRequest, reply: &McpReply) -> Result<Value, McpError> {
        match read_reply(reply, request.id, self.session_id.is_some()) {
            Ok(ReadReply {
                result,
                notifications,
            }) => {
                if notifications
                    .iter()
                    .any(|n| n == "notifications/tools/list_changed")
                {
                    self.tools_changed = true;
                }
                Ok(result.unwrap_or(Value::Null))
            }
            Err(McpError::SessionExpired) => {
                self.reset();
                Err(McpError::SessionExpired)
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: Value, session: Option<&str>) -> McpReply {
        McpReply {
            status: 200,
            content_type: Some("application/json".into()),
            session_id: session.map(str::to_string),
            www_authenticate: None,
            body: body.to_string(),
        }
    }

    #[test]
    fn the_session_id_and_version_go_on_every_request_after_initialize() {
        let auth = vec![("authorization".to_string(), "Bearer t".to_string())];
        let mut s = Session::new("http://x/mcp", &auth);
        let init = s.initialize();
        assert!(!init.headers.iter().any(|(k, _)| k == "mcp-session-id"));
        let answer = json!({"jsonrpc":"2.0","id":init.id,"result":{"protocolVersion":"2025-06-18","capabilities":{}}});
        s.on_initialize(&init, &ok(answer, Some("s-1"))).unwrap();
        let list = s.list_tools(Some("page2"));
        let header = |k: &str| {
            list.headers
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("mcp-session-id"), Some("s-1"));
        assert_eq!(header("mcp-protocol-version"), Some("2025-06-18"));
        assert_eq!(header("authorization"), Some("Bearer t"));
        let body: Value = serde_json::from_str(list.body.as_deref().unwrap()).unwrap();
        assert_eq!(body["params"]["cursor"], "page2");
        assert_ne!(list.id, init.id);
    }

    #[test]
    fn an_unknown_protocol_version_is_refused() {
        let mut s = Session::new("http://x/mcp", &[]);
        let init = s.initialize();
        let answer =
            json!({"jsonrpc":"2.0","id":init.id,"result":{"protocolVersion":"1999-01-01"}});
        assert!(matches!(
            s.on_initialize(&init, &ok(answer, None)),
            Err(McpError::Malformed(_))
        ));
        assert!(!s.is_open());
    }

    #[test]
    fn a_list_changed_notification_on_an_answer_is_noted_once() {
        let mut s = Session::new("http://x/mcp", &[]);
        let call = s.call_tool("add", Value::Null);
        let body: Value = serde_json::from_str(call.body.as_deref().unwrap()).unwrap();
        assert_eq!(body["params"]["arguments"], json!({}));
        let reply = McpReply {
            status: 200,
            content_type: Some("text/event-stream".into()),
            session_id: None,
            www_authenticate: None,
            body: format!(
                "data: {}\n\ndata: {}\n\n",
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
                json!({"jsonrpc":"2.0","id":call.id,"result":{"content":[]}})
            ),
        };
        assert_eq!(s.read(&call, &reply), Ok(json!({"content": []})));
        assert!(s.take_tools_changed());
        assert!(!s.take_tools_changed());
    }

    #[test]
    fn a_fork_never_numbers_a_request_like_its_session() {
        let mut s = Session::new("http://x/mcp", &[]);
        let mut fork = s.fork(3);
        let ids: Vec<_> = (0..3).map(|_| fork.list_tools(None).id.unwrap()).collect();
        let next = s.call_tool("add", Value::Null).id.unwrap();
        assert!(!ids.contains(&next), "{ids:?} and {next}");
    }

    #[test]
    fn an_ended_session_is_forgotten() {
        let mut s = Session::new("http://x/mcp", &[]);
        let init = s.initialize();
        let answer =
            json!({"jsonrpc":"2.0","id":init.id,"result":{"protocolVersion":"2025-03-26"}});
        s.on_initialize(&init, &ok(answer, Some("s-9"))).unwrap();
        let call = s.call_tool("add", json!({"a": 1}));
        let gone = McpReply {
            status: 404,
            ..McpReply::default()
        };
        assert_eq!(s.read(&call, &gone), Err(McpError::SessionExpired));
        assert!(!s.is_open() && s.session_id().is_none());
    }
}

//! A server the agent's code added at run time, as it is stored (one row
//! of `chat_mcp_servers` per server id, the JSON below with its shape
//! version `v`), and the description an author gives (`McpServer`).

use serde::{Deserialize, Serialize};

/// The shape version of a stored server row.
pub const RECORD_VERSION: u32 = 1;

/// An MCP server the agent connects to: a name (its tools are offered as
/// `mcp_<id>_<tool>`, see `names`), the URL of its Streamable HTTP
/// endpoint and headers sent with every request (e.g. a bearer token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServer {
    pub name: String,
    pub url: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// Every call to this server's tools waits for a person's approval.
    #[serde(default)]
    pub needs_approval: bool,
    /// The deadline of one call, in ms (`None`: the agent's tool deadline).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

impl McpServer {
    pub fn new(name: &str, url: &str) -> McpServer {
        McpServer {
            name: name.to_string(),
            url: url.to_string(),
            headers: Vec::new(),
            needs_approval: false,
            timeout_ms: None,
        }
    }

    /// A header sent with every request to the server.
    pub fn header(mut self, name: &str, value: &str) -> McpServer {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_string()));
        self
    }

    /// `Authorization: Bearer <token>` on every request.
    pub fn bearer(self, token: &str) -> McpServer {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// Every call to the server's tools waits for a person's approval.
    pub fn needs_approval(mut self) -> McpServer {
        self.needs_approval = true;
        self
    }

    /// The deadline of one call to the server's tools.
    pub fn timeout_ms(mut self, ms: u64) -> McpServer {
        self.timeout_ms = Some(ms);
        self
    }

    /// Whether the author gave the credentials (an `Authorization` header):
    /// then a 401 is a failure, not a reason to ask a person to sign in.
    pub fn has_authorization(&self) -> bool {
        self.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    }

    /// Whether the URL is one `fetch` can reach.
    pub fn check(&self) -> Result<(), String> {
        let url = self.url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!("the MCP server URL '{url}' is not http(s)"));
        }
        if self
            .headers
            .iter()
            .any(|(k, v)| k.is_empty() || k.contains(['\r', '\n', ':']) || v.contains(['\r', '\n']))
        {
            return Err("an MCP server header has an invalid name or value".to_string());
        }
        Ok(())
    }
}

/// A stored server row's JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    pub v: u32,
    #[serde(flatten)]
    pub server: McpServer,
}

impl ServerRecord {
    pub fn of(server: &McpServer) -> ServerRecord {
        ServerRecord {
            v: RECORD_VERSION,
            server: server.clone(),
        }
    }

    /// Reads a stored row (`Err`: a row this release cannot read).
    pub fn read(json: &str) -> Result<ServerRecord, String> {
        let record: ServerRecord = serde_json::from_str(json).map_err(|e| e.to_string())?;
        if record.v > RECORD_VERSION {
            return Err(format!(
                "row version {} is newer than this release's",
                record.v
            ));
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_written() {
        let server = McpServer::new("Demo", "http://127.0.0.1:8790/mcp")
            .bearer("t")
            .needs_approval();
        let json = serde_json::to_string(&ServerRecord::of(&server)).unwrap();
        assert!(json.contains("\"v\":1"));
        assert_eq!(ServerRecord::read(&json).unwrap().server, server);
        assert!(ServerRecord::read(r#"{"v":9,"name":"a","url":"http://x"}"#).is_err());
    }

    #[test]
    fn urls_and_headers_are_checked() {
        assert!(McpServer::new("a", "ftp://x").check().is_err());
        assert!(McpServer::new("a", "http://x")
            .header("x-a", "1\r\n")
            .check()
            .is_err());
        assert!(McpServer::new("a", "https://x/mcp")
            .bearer("t")
            .check()
            .is_ok());
    }
}

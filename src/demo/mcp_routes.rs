//! The demo agent's routes for its MCP servers, an operator's act: adding a
//! server makes the agent fetch its URL, offer its tools to the model with
//! no approval and show its status and errors to every tab. So they are off
//! unless the deployment sets `MCP_ADMIN_TOKEN`, and then answer only a
//! request carrying it as `Authorization: Bearer …` (which a page of another
//! site cannot make a browser send without asking first), whatever
//! `authorize` lets in.
//!
//! `GET …/mcp-servers` lists the agent's MCP servers, `POST …/mcp-servers`
//! `{"name", "url", "token"?}` (as `application/json`, at most
//! `MCP_SERVER_BODY_LIMIT` bytes) adds one (stored; connected now and after
//! every restart), `POST …/mcp-servers/<name>/remove` removes it.

use serde::Deserialize;
use worker::{Method, Request, Response};

use crate::agent::access::{require_token, RequestInfo};
use crate::agent::body::{read_json_typed, refusal};
use crate::agent::AgentHandle;
use crate::mcp::McpServer;

/// A server to add: its name, URL and token.
const MCP_SERVER_BODY_LIMIT: usize = 16 * 1024;

#[derive(Deserialize)]
struct AddMcpServer {
    name: String,
    url: String,
    token: Option<String>,
}

/// The refusal of a request that does not carry the operator's token
/// (`MCP_ADMIN_TOKEN` as `Authorization: Bearer`), or `None` if it does;
/// unset, every request is refused. `what` names what is off.
pub fn refuse_non_admin(
    req: &Request,
    admin_token: Option<&str>,
    what: &str,
) -> worker::Result<Option<Response>> {
    let Some(admin_token) = admin_token.filter(|t| !t.is_empty()) else {
        return Response::error(
            format!(
                "{what} is off: set the MCP_ADMIN_TOKEN secret and send it as \
                 Authorization: Bearer"
            ),
            403,
        )
        .map(Some);
    };
    let request = RequestInfo {
        headers: vec![(
            "authorization".into(),
            req.headers().get("authorization")?.unwrap_or_default(),
        )],
        ..RequestInfo::default()
    };
    match require_token(&request, Some(admin_token)) {
        Ok(()) => Ok(None),
        Err(refused) => Response::error(refused.reason, refused.status).map(Some),
    }
}

/// The answer of an MCP route, or `None` for any other path.
pub async fn serve(
    req: &mut Request,
    path: &str,
    agent: &AgentHandle,
    admin_token: Option<&str>,
) -> worker::Result<Option<Response>> {
    let listing = path.ends_with("/mcp-servers");
    if !listing && !path.contains("/mcp-servers/") {
        return Ok(None);
    }
    if let Some(refused) = refuse_non_admin(req, admin_token, "MCP server management")? {
        return Ok(Some(refused));
    }
    let post = req.method() == Method::Post;
    if listing {
        if !post {
            return Response::from_json(&agent.mcp_servers()).map(Some);
        }
        let add: AddMcpServer = match read_json_typed(req, MCP_SERVER_BODY_LIMIT).await {
            Ok(add) => add,
            Err(e) => return refusal(&e).map(Some),
        };
        let mut server = McpServer::new(&add.name, &add.url);
        if let Some(token) = add.token {
            server = server.bearer(&token);
        }
        return match agent.add_mcp_server(server) {
            Ok(id) => Ok(Some(
                Response::from_json(&serde_json::json!({ "id": id }))?.with_status(201),
            )),
            Err(e) => Response::error(e, 400).map(Some),
        };
    }
    let rest = path
        .split_once("/mcp-servers/")
        .map_or("", |(_, rest)| rest);
    match rest.strip_suffix("/remove") {
        Some(name) if post => match agent.remove_mcp_server(name) {
            Ok(removed) => {
                Response::from_json(&serde_json::json!({ "removed": removed })).map(Some)
            }
            Err(e) => Response::error(e, 400).map(Some),
        },
        _ => Ok(None),
    }
}

//! A request to the agent's Durable Object: the WebSocket upgrade (the
//! socket accepted with its tags, its readonly flag and its client, under the
//! per-client share of the agent's sockets), the internal paths, the debug
//! and MCP routes, and the author's own routes (`on_request`).

use std::rc::Rc;

use wasm_bindgen_futures::spawn_local;
use worker::{Request, Response, WebSocketPair};

use crate::core::{ConnId, Event};

use crate::agent::access::channel_auth::CHANNEL_AUTH_HEADER;
use crate::agent::access::request_info;
use crate::agent::connections::socket::Attachment;
use crate::agent::connections::Connection;
use crate::agent::ids::random_token;

use super::AgentHost;
#[cfg(feature = "debug-routes")]
use super::{debug, debug_author};

/// The address of the client a request comes from (`CF-Connecting-IP`,
/// which Cloudflare sets), if it names one.
fn client_address(req: &Request) -> Option<String> {
    let address = req.headers().get("cf-connecting-ip").ok().flatten()?;
    let address = address.trim();
    (!address.is_empty() && address.len() <= 64).then(|| address.to_ascii_lowercase())
}

impl AgentHost {
    pub async fn fetch(self: &Rc<Self>, req: Request) -> worker::Result<Response> {
        if self.destroyed.get() {
            // The object resets in a moment; the next request finds it new.
            return Response::error("this agent was destroyed; try again", 503);
        }
        let url = req.url()?;
        let path = url.path();
        #[cfg(feature = "debug-routes")]
        if self.is_storage_report(path) {
            // Before the name is written down: a report of what is stored.
            return self.storage_report().await;
        }
        let internal = crate::routing::is_channel_path(path);
        if !internal {
            self.note_agent_url(&url);
            if req.method() == worker::Method::Get {
                let cookie = req.headers().get("cookie").ok().flatten();
                if let Some(response) = self.mcp_oauth_callback(&url, cookie.as_deref()).await {
                    return Ok(response);
                }
            }
        }
        let channel = path.ends_with(crate::routing::CHANNEL_PATH);
        if internal && !self.internal_fetch {
            // Other agents reach this one over RPC; the fetch paths exist
            // only as an opt-in fallback.
            return Response::error("Not implemented", 404);
        }
        if internal {
            // Checked here, not only by a router: a parent's channel carries
            // the deployment's credential (see channel_auth.rs).
            let presented = req.headers().get(CHANNEL_AUTH_HEADER)?;
            let own_id = self.state.id().to_string();
            if let Some(warning) = self.channel_policy.warning() {
                crate::log::write(crate::log::LogLevel::Warn, warning);
            }
            if !self.channel_policy.allows(presented.as_deref(), &own_id) {
                return Response::error("Forbidden", 403);
            }
        } else if let Err(refusal) = (self.authorize)(&request_info(&req)?) {
            return Response::error(refusal.reason, refusal.status);
        }
        // Only a request let in names the instance (a stored row) and
        // connects the MCP servers.
        if let Some(name) = crate::routing::instance_name(path) {
            self.remember_name(&name);
        }
        if !internal {
            self.ensure_mcp();
        }
        if let Some(refused) = crate::agent::body::refuse_declared(&req) {
            return refused;
        }
        #[cfg(feature = "debug-routes")]
        if let Some(response) = self.debug_route(&req, path) {
            return response;
        }
        if internal && !channel {
            return crate::agent::subagents::remote::serve(self.handle(), req).await;
        }
        #[cfg(feature = "debug-routes")]
        if self.debug.tools && path.ends_with(debug::STARTED_ROUTE) {
            return Response::from_json(
                &serde_json::json!({ "started": self.debug.started.get() }),
            );
        }
        #[cfg(feature = "debug-routes")]
        if self.debug.tools && path.contains(debug_author::ROUTES) {
            return debug_author::serve(req, self.handle()).await;
        }
        if path.ends_with("/get-messages") {
            return self.get_messages();
        }
        let upgrade = req.headers().get("Upgrade")?.unwrap_or_default();
        if !upgrade.eq_ignore_ascii_case("websocket") {
            let route = self
                .child_call_scope(None)
                .run((self.on_request)(req, self.handle()));
            return match route.await? {
                Some(response) => Ok(response),
                None => Response::error("Not implemented", 404),
            };
        }
        let max_connections = self.core.borrow().config().settings.limits.max_connections;
        if max_connections > 0 && self.state.get_websockets().len() >= max_connections {
            return Response::error(
                format!("too many connections to this agent (limit {max_connections})"),
                429,
            );
        }
        let client = client_address(&req);
        if let Some(refused) = self.over_client_share(client.as_deref(), max_connections) {
            return refused;
        }
        let pk = url
            .query_pairs()
            .find(|(k, _)| k == "_pk")
            .map(|(_, v)| v.into_owned())
            .filter(|v| !v.is_empty() && v.len() <= 128);
        let conn = match channel {
            true => self.unique_conn_id(Some(format!("channel:{}", random_token(12)))),
            false => self.unique_conn_id(pk),
        };
        let request = request_info(&req)?;
        let (tags, readonly) = match channel {
            true => (Vec::new(), false),
            false => self.connect_decisions(&conn, &request),
        };
        let pair = WebSocketPair::new()?;
        let tag_refs: Vec<&str> = tags.iter().map(String::as_str).collect();
        self.state
            .accept_websocket_with_tags(&pair.server, &tag_refs);
        pair.server.serialize_attachment(Attachment {
            client: client.clone(),
            ..Attachment::new(&conn, channel, readonly)
        })?;
        let connection = Connection::new(&conn, pair.server.clone(), tags);
        self.closed.borrow_mut().retain(|c| *c != conn);
        self.sockets.borrow_mut().insert(conn.clone(), pair.server);
        self.dispatch(if channel {
            Event::Adopted {
                conn,
                list_matches: false,
            }
        } else {
            Event::Connected { conn, client }
        });
        if !channel {
            spawn_local((self.author.on_connect)(
                (connection, request),
                self.handle(),
            ));
        }
        Response::from_websocket(pair.client)
    }

    /// A 429 when the client at `client` already holds its share of the
    /// agent's sockets (`MAX_CONNECTIONS_PER_CLIENT`; by default three
    /// quarters of `max_connections`), so one client cannot hold them all.
    pub(super) fn over_client_share(
        &self,
        client: Option<&str>,
        max_connections: usize,
    ) -> Option<worker::Result<Response>> {
        let client = client?;
        let share = self
            .max_connections_per_client
            .unwrap_or(max_connections - max_connections / 4);
        if share == 0 {
            return None;
        }
        let held = self
            .state
            .get_websockets()
            .iter()
            .filter_map(|ws| ws.deserialize_attachment::<Attachment>().ok().flatten())
            .filter(|a| !a.closed && a.client.as_deref() == Some(client))
            .count();
        (held >= share).then(|| {
            Response::error(
                format!("too many connections from one client to this agent (limit {share})"),
                429,
            )
        })
    }

    /// The client picks `_pk`; two sockets with the same one stay distinct.
    pub(super) fn unique_conn_id(&self, pk: Option<String>) -> ConnId {
        let base = pk.unwrap_or_else(|| random_token(16));
        let sockets = self.sockets.borrow();
        let mut candidate = base.clone();
        let mut n = 1;
        while sockets.contains_key(candidate.as_str()) {
            n += 1;
            candidate = format!("{base}#{n}");
        }
        Rc::from(candidate)
    }

    pub(super) fn remember_name(self: &Rc<Self>, name: &str) {
        if self.core.borrow().config().name != name {
            self.dispatch(Event::Named {
                name: name.to_string(),
            });
        }
    }
}

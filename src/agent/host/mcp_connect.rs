//! Connecting to an MCP server and keeping it connected: the handshake (a
//! sign-in when the server asks for one, the older HTTP+SSE transport when
//! the server speaks only that), listing its tools again when it says they
//! changed, and marking it failed when it cannot be reached.

use std::rc::Rc;

use wasm_bindgen_futures::spawn_local;

use crate::agent::tools::context::AbortSignal as CallAbort;
use crate::core::quoted;
use crate::log::LogLevel;
use crate::mcp::connect::MAX_TOOL_PAGES;
use crate::mcp::legacy_sse::should_fall_back;
use crate::mcp::{Connect, ConnectStep, McpError, McpRequest, Session};
use crate::outbound::OutboundHosts;

use super::super::mcp_http::exchange;
use super::super::mcp_oauth::AfterUnauthorized;
use super::super::mcp_sse::SseLink;
use super::super::{now_ms, AgentHost};
use super::CONNECT_TIMEOUT_MS;

impl AgentHost {
    /// Lists server `id`'s tools again on its open session (it said they
    /// changed); a listing that fails connects the server again instead.
    pub(super) fn relist_mcp(self: &Rc<Self>, id: String) {
        let host = self.clone();
        spawn_local(async move { host.run_relist(id).await });
    }

    async fn run_relist(self: Rc<Self>, id: String) {
        let forked = {
            let mut state = self.mcp.state.borrow_mut();
            let link = state.links.get(&id).cloned();
            state
                .sessions
                .get_mut(&id)
                .map(|s| (s.fork(MAX_TOOL_PAGES as u64), link))
        };
        let Some((mut session, link)) = forked else {
            return;
        };
        let (mut listing, mut request) = Connect::relist(&mut session);
        let outcome = loop {
            let reply = send(
                link.as_ref(),
                self.mcp.hosts(),
                &request,
                CONNECT_TIMEOUT_MS,
                None,
            )
            .await;
            match listing.on_reply(&mut session, reply) {
                ConnectStep::Send(next) => request = next,
                ConnectStep::Done(outcome) => break outcome,
            }
        };
        match outcome {
            Ok(listed) => {
                {
                    let mut state = self.mcp.state.borrow_mut();
                    if state.connecting.contains_key(&id) || !state.sessions.contains_key(&id) {
                        return;
                    }
                    state.servers.set_tools(&id, listed.tools, listed.left_out);
                }
                self.log_line(
                    LogLevel::Info,
                    &format!("mcp: server '{id}' listed its tools again"),
                );
                self.publish_mcp();
            }
            Err(e) => {
                self.log_line(
                    LogLevel::Warn,
                    &format!(
                        "mcp: server '{id}' could not list its tools again: {}",
                        quoted(&e.to_string())
                    ),
                );
                self.connect_mcp(id);
            }
        }
    }

    pub(super) fn connect_mcp(self: &Rc<Self>, id: String) {
        let host = self.clone();
        spawn_local(async move { host.run_connect(id).await });
    }

    /// One handshake with server `id`; its outcome is the server's new state.
    pub(super) async fn run_connect(self: Rc<Self>, id: String) {
        let refused = {
            let state = self.mcp.state.borrow();
            let url = state.servers.server(&id).map(|s| s.url.clone());
            url.and_then(|url| self.mcp.hosts.check(&url, "MCP server URL").err())
        };
        if let Some(why) = refused {
            // A declared server on a host the policy refuses: never fetched.
            self.mcp_sign_in_failed(&id, &why);
            return;
        }
        let started = {
            let mut state = self.mcp.state.borrow_mut();
            let Some(server) = state.servers.server(&id).cloned() else {
                return;
            };
            state.next_generation += 1;
            let generation = state.next_generation;
            state.connecting.insert(id.clone(), generation);
            state.sessions.remove(&id);
            if let Some(link) = state.links.remove(&id) {
                link.close();
            }
            state.servers.set_connecting(&id);
            (generation, server)
        };
        let (generation, server) = started;
        self.publish_mcp();
        let mut session = Session::new(&server.url, &server.headers);
        let mut may_refresh = true;
        let mut link = None;
        let mut outcome = loop {
            if let Some(token) = self.mcp_bearer(&id, &server).await {
                session.set_bearer(&token);
            }
            let outcome = handshake(&mut session, self.mcp.hosts(), None).await;
            let Err(McpError::Unauthorized { challenge, .. }) = &outcome else {
                break outcome;
            };
            if server.has_authorization() {
                break outcome;
            }
            match self
                .mcp_unauthorized(&id, &server, challenge.clone(), may_refresh)
                .await
            {
                AfterUnauthorized::Retry => may_refresh = false,
                AfterUnauthorized::Failed(e) => break Err(e),
                AfterUnauthorized::SignIn { url, issuer } => {
                    {
                        let mut state = self.mcp.state.borrow_mut();
                        if state.connecting.get(&id) != Some(&generation) {
                            return;
                        }
                        state.connecting.remove(&id);
                        state.servers.set_authenticating(&id, &url, &issuer);
                    }
                    self.publish_mcp();
                    return;
                }
            }
        };
        if matches!(&outcome, Err(e) if should_fall_back(e)) {
            // A server that speaks only the older HTTP+SSE transport?
            let bearer = self.mcp_bearer(&id, &server).await;
            let mut headers = server.headers.clone();
            if let Some(token) = &bearer {
                headers.push(("authorization".into(), format!("Bearer {token}")));
            }
            if let Ok((opened, post_url)) =
                SseLink::open(&server.url, &headers, self.mcp.hosts(), CONNECT_TIMEOUT_MS).await
            {
                let mut legacy = Session::new(&post_url, &server.headers);
                if let Some(token) = &bearer {
                    legacy.set_bearer(token);
                }
                outcome = handshake(&mut legacy, self.mcp.hosts(), Some(&opened)).await;
                session = legacy;
                link = Some(opened);
            }
        }
        {
            let mut state = self.mcp.state.borrow_mut();
            if state.connecting.get(&id) != Some(&generation) {
                if let Some(link) = link {
                    link.close();
                }
                return;
            }
            state.connecting.remove(&id);
            match outcome {
                Ok(connected) => {
                    self.log_line(
                        LogLevel::Info,
                        &format!(
                            "mcp: server '{id}' ready with {} tools",
                            connected.tools.len()
                        ),
                    );
                    if let Some(note) = state.servers.set_ready(&id, connected) {
                        self.log_line(
                            LogLevel::Warn,
                            &format!("mcp: server '{id}': {}", quoted(&note)),
                        );
                    }
                    state.sessions.insert(id.clone(), session);
                    if let Some(link) = link {
                        let (host, server) = (Rc::downgrade(&self), id.clone());
                        link.on_end(move |why| {
                            if let Some(host) = host.upgrade() {
                                host.mark_mcp_failed(&server, &why);
                            }
                        });
                        state.links.insert(id.clone(), link);
                    }
                    state.failed_at.remove(&id);
                }
                Err(e) => {
                    if let Some(link) = link {
                        link.close();
                    }
                    self.log_line(
                        LogLevel::Warn,
                        &format!("mcp: server '{id}' failed: {}", quoted(&e.to_string())),
                    );
                    state.servers.set_failed(&id, &e.to_string());
                    state.failed_at.insert(id.clone(), now_ms());
                }
            }
        }
        self.publish_mcp();
    }

    pub(super) fn mark_mcp_failed(self: &Rc<Self>, id: &str, error: &McpError) {
        {
            let mut state = self.mcp.state.borrow_mut();
            if state.connecting.contains_key(id) {
                return;
            }
            state.sessions.remove(id);
            if let Some(link) = state.links.remove(id) {
                link.close();
            }
            state.servers.set_failed(id, &error.to_string());
            state.failed_at.insert(id.to_string(), now_ms());
        }
        self.log_line(
            LogLevel::Warn,
            &format!("mcp: server '{id}' failed: {}", quoted(&error.to_string())),
        );
        self.publish_mcp();
    }
}

/// `initialize`, `initialized` and the tool listing on `session`.
async fn handshake(
    session: &mut Session,
    hosts: &OutboundHosts,
    link: Option<&Rc<SseLink>>,
) -> Result<crate::mcp::Connected, McpError> {
    let (mut connect, mut request) = Connect::start(session);
    loop {
        let reply = send(link, hosts, &request, CONNECT_TIMEOUT_MS, None).await;
        match connect.on_reply(session, reply) {
            ConnectStep::Send(next) => request = next,
            ConnectStep::Done(outcome) => return outcome,
        }
    }
}

/// One exchange over the server's transport: its event stream when it has
/// one (the older HTTP+SSE transport), a plain POST otherwise.
pub(super) async fn send(
    link: Option<&Rc<SseLink>>,
    hosts: &OutboundHosts,
    request: &McpRequest,
    timeout_ms: u64,
    abort: Option<CallAbort>,
) -> Result<crate::mcp::McpReply, McpError> {
    match link {
        Some(link) => link.send(request, timeout_ms, abort).await,
        None => exchange(request, hosts, timeout_ms, abort).await,
    }
}

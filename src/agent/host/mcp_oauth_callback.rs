//! The OAuth callback of the agent's MCP servers, `GET <agent>/callback`:
//! the `state` checked against the sign-in in progress (made for it, used
//! once, ten minutes at most), the code traded with the PKCE verifier for
//! tokens, which are stored, and the server connected; a refused sign-in
//! leaves the server failed with the reason.

use std::rc::Rc;

use worker::{Response, Url};

use crate::log::LogLevel;
use crate::mcp::oauth::grant::{code_exchange, read_tokens};
use crate::mcp::oauth::{server_of_state, Credentials};

use super::mcp_http::exchange;
use super::mcp_oauth::{CALLBACK_SUFFIX, OAUTH_TIMEOUT_MS};
use super::{now_ms, AgentHost};

impl AgentHost {
    /// `GET <agent>/callback?code&state` (or `?error&state`) for one of
    /// the agent's servers: `None` when the request is not one (the
    /// author's routes get it). A `state` that names one of the servers is
    /// the proof: it was made for this authorization, is used once and
    /// expires after ten minutes; so the callback is served before the
    /// agent's `authorize` (a browser coming back from a sign-in carries no
    /// agent credentials).
    pub(super) async fn mcp_oauth_callback(self: &Rc<Self>, url: &Url) -> Option<Response> {
        if !url.path().ends_with(CALLBACK_SUFFIX) {
            return None;
        }
        let query: std::collections::HashMap<String, String> =
            url.query_pairs().into_owned().collect();
        let state = query.get("state")?;
        let id = server_of_state(state)?.to_string();
        let refuse = |text: &str| Response::error(text, 400).ok();
        // A sign-in this agent stored is the proof; only then are its
        // servers started (a stranger's callback connects nothing).
        let stored = self.store.mcp_credentials(&id).ok().flatten()?;
        let started =
            Credentials::read(&stored).is_ok_and(|c| c.pending_matches(state, &id, now_ms()));
        if !started {
            return refuse("This sign-in is unknown or has expired.");
        }
        self.ensure_mcp();
        let server = self.mcp.server(&id)?;
        let Some(mut credentials) = self.mcp_credentials(&id, &server.url) else {
            return refuse("This sign-in is unknown or has expired.");
        };
        if !credentials.pending_matches(state, &id, now_ms()) {
            return refuse("This sign-in is unknown or has expired.");
        }
        let Some(pending) = credentials.pending.take() else {
            return refuse("This sign-in is unknown or has expired.");
        };
        self.store_mcp_credentials(&id, &credentials);
        if let Some(error) = query.get("error") {
            let text = match query.get("error_description") {
                Some(d) => format!("the sign-in was refused: {error}: {d}"),
                None => format!("the sign-in was refused: {error}"),
            };
            self.mcp_sign_in_failed(&id, &text);
            return refuse(&text);
        }
        let Some(code) = query.get("code") else {
            return refuse("The sign-in brought no code.");
        };
        let (Some(auth_server), Some(client)) =
            (credentials.auth_server.clone(), credentials.client.clone())
        else {
            return refuse("This sign-in is unknown or has expired.");
        };
        let request = code_exchange(
            &auth_server,
            &client,
            code,
            &pending.verifier,
            &credentials.redirect_uri,
            &credentials.resource,
        );
        let tokens = match exchange(&request, self.mcp.hosts(), OAUTH_TIMEOUT_MS, None).await {
            Ok(reply) => read_tokens(&reply, now_ms(), None),
            Err(e) => Err(e),
        };
        match tokens {
            Ok(tokens) => {
                credentials.tokens = Some(tokens);
                self.store_mcp_credentials(&id, &credentials);
                self.log_line(LogLevel::Info, &format!("mcp: server '{id}' signed in"));
                self.reconnect_mcp(&id);
                let home = format!("{}/", url.origin().ascii_serialization());
                let target = Url::parse(&home).ok()?;
                Response::redirect(target).ok()
            }
            Err(e) => {
                let text = format!("the sign-in could not be completed: {e}");
                self.mcp_sign_in_failed(&id, &text);
                refuse(&text)
            }
        }
    }
}

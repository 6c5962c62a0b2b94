//! The OAuth callback of the agent's MCP servers, `GET <agent>/callback`:
//! the `state` checked against the sign-in in progress (made for it, used
//! once, ten minutes at most), the code traded with the PKCE verifier for
//! tokens, which are stored, and the server connected; a refused sign-in
//! leaves the server failed with the reason. The same path serves the start
//! link of a sign-in bound to a browser (`?start=<state>`, see
//! `mcp::oauth::browser_binding`): the first browser to open it gets the
//! one-time cookie the callback must then bring.

use std::rc::Rc;

use worker::{Headers, Response, Url};

use crate::agent::ids::secret_bytes;
use crate::log::LogLevel;
use crate::mcp::oauth::browser_binding::{
    clear_cookie, cookie_name, cookie_value, presented_matches, secret_hash, set_cookie,
    START_PARAM,
};
use crate::mcp::oauth::grant::{code_exchange, read_tokens};
use crate::mcp::oauth::pkce::base64url;
use crate::mcp::oauth::{server_of_state, Credentials};

use super::lazy::SIGN_IN_UNKNOWN;
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
    /// agent credentials). `cookie` is the request's `Cookie` header.
    pub(super) async fn mcp_oauth_callback(
        self: &Rc<Self>,
        url: &Url,
        cookie: Option<&str>,
    ) -> Option<Response> {
        if !url.path().ends_with(CALLBACK_SUFFIX) {
            return None;
        }
        let query: std::collections::HashMap<String, String> =
            url.query_pairs().into_owned().collect();
        if let Some(state) = query.get(START_PARAM) {
            return self.start_sign_in(state, url.path(), cookie).ok();
        }
        let state = query.get("state")?;
        let id = server_of_state(state)?.to_string();
        let refuse = |text: &str| Response::error(text, 400).ok();
        // A sign-in this agent stored is the proof; only then are its
        // servers started (a stranger's callback connects nothing).
        let stored = self.store.mcp_credentials(&id).ok().flatten()?;
        let started =
            Credentials::read(&stored).is_ok_and(|c| c.pending_matches(state, &id, now_ms()));
        if !started {
            return refuse(SIGN_IN_UNKNOWN);
        }
        self.ensure_mcp();
        let server = self.mcp.server(&id)?;
        let Some(mut credentials) = self.mcp_credentials(&id, &server.url) else {
            return refuse(SIGN_IN_UNKNOWN);
        };
        if !credentials.pending_matches(state, &id, now_ms()) {
            return refuse(SIGN_IN_UNKNOWN);
        }
        // Bound to a browser (the author's option, or the start link was
        // opened): only that browser's cookie completes or refuses it; the
        // sign-in stays pending for it otherwise.
        let name = cookie_name(&id);
        let kept = credentials.pending.as_ref().and_then(|p| p.binding.clone());
        if self.sign_in_same_browser || kept.is_some() {
            let presented = cookie.and_then(|c| cookie_value(c, &name));
            if !kept.is_some_and(|kept| presented_matches(&kept, presented)) {
                self.log_line(
                    LogLevel::Warn,
                    &format!("mcp: a callback for '{id}' from another browser was refused"),
                );
                return Response::error(OTHER_BROWSER, 403).ok();
            }
        }
        let Some(pending) = credentials.pending.take() else {
            return refuse(SIGN_IN_UNKNOWN);
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
            return refuse(SIGN_IN_UNKNOWN);
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
                let done = clear_cookie(&name, url.path());
                redirect(&home, Some(&done))
            }
            Err(e) => {
                let text = format!("the sign-in could not be completed: {e}");
                self.mcp_sign_in_failed(&id, &text);
                refuse(&text)
            }
        }
    }

    /// `GET <agent>/callback?start=<state>`: the first browser to open a
    /// pending sign-in's link is handed a one-time secret in a cookie for
    /// the callback path and sent on to the authorization server; the same
    /// browser may open it again, another is refused.
    fn start_sign_in(
        &self,
        state: &str,
        path: &str,
        cookie: Option<&str>,
    ) -> worker::Result<Response> {
        let refuse = |text: &str, status: u16| Response::error(text, status);
        let Some(id) = server_of_state(state) else {
            return refuse(SIGN_IN_UNKNOWN, 400);
        };
        let stored = self.store.mcp_credentials(id).ok().flatten();
        let Some(mut credentials) = stored.and_then(|json| Credentials::read(&json).ok()) else {
            return refuse(SIGN_IN_UNKNOWN, 400);
        };
        if !credentials.pending_matches(state, id, now_ms()) {
            return refuse(SIGN_IN_UNKNOWN, 400);
        }
        let Some(pending) = credentials.pending.as_mut() else {
            return refuse(SIGN_IN_UNKNOWN, 400);
        };
        let name = cookie_name(id);
        let presented = cookie.and_then(|c| cookie_value(c, &name));
        let handed = match &pending.binding {
            Some(kept) if presented_matches(kept, presented) => None,
            Some(_) => return refuse(OPENED_ELSEWHERE, 409),
            None => {
                let secret = match secret_bytes::<32>() {
                    Ok(bytes) => base64url(&bytes),
                    Err(e) => return refuse(&format!("the sign-in cannot start: {e}"), 500),
                };
                pending.binding = Some(secret_hash(&secret));
                Some(set_cookie(&name, &secret, path))
            }
        };
        let target = pending.auth_url.clone();
        if handed.is_some() {
            self.store_mcp_credentials(id, &credentials);
            self.log_line(
                LogLevel::Info,
                &format!("mcp: the sign-in of '{id}' is bound to the browser that opened it"),
            );
        }
        match redirect(&target, handed.as_deref()) {
            Some(response) => Ok(response),
            None => refuse("the sign-in cannot start", 500),
        }
    }
}

/// The refusal of a callback that does not bring the cookie of the browser
/// that opened the sign-in's link.
const OTHER_BROWSER: &str = "This sign-in must be completed in the browser that opened its link.";
/// The refusal of a start link opened in a second browser.
const OPENED_ELSEWHERE: &str = "This sign-in was opened in another browser; finish it there.";

/// A `302` to `location`, setting `cookie` (a `Set-Cookie` value) if given.
fn redirect(location: &str, cookie: Option<&str>) -> Option<Response> {
    let headers = Headers::new();
    headers.set("location", location).ok()?;
    headers.set("cache-control", "no-store").ok()?;
    if let Some(cookie) = cookie {
        headers.set("set-cookie", cookie).ok()?;
    }
    Some(
        Response::empty()
            .ok()?
            .with_status(302)
            .with_headers(headers),
    )
}

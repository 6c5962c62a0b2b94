//! The host's side of OAuth for MCP servers: the access token sent to a
//! server (refreshed shortly before it expires, one refresh at a time per
//! server), what a 401 leads to (a refresh, or a new authorization: the
//! authorization server found, the agent registered as a client, a PKCE
//! verifier and `state` kept, and the URL a person opens), and the
//! callback `GET <agent>/callback?code&state` that trades the code for
//! tokens and connects the server (`mcp_oauth_callback.rs`). The sign-in is stored per server
//! (`store::mcp_servers`), so it outlives restarts. The protocol is
//! `crate::mcp::oauth`, sans-I/O.

use std::rc::Rc;
use std::time::Duration;

use worker::{Delay, Url};

use crate::core::quoted;
use crate::log::LogLevel;
use crate::mcp::oauth::browser_binding::start_link;
use crate::mcp::oauth::discovery::{
    auth_server_metadata_urls, get, read_auth_server_metadata, read_challenge,
    read_resource_metadata, resource_metadata_urls,
};
use crate::mcp::oauth::grant::{
    authorization_url, read_registration, read_tokens, refresh, registration, Authorization,
};
use crate::mcp::oauth::pkce::{code_challenge, code_verifier};
use crate::mcp::oauth::signed_state;
use crate::mcp::oauth::{Credentials, Pending, Tokens};
use crate::mcp::{McpError, McpServer};

use super::mcp_http::exchange;
use super::{now_ms, AgentHost};
use crate::agent::ids::secret_bytes;

/// The deadline of each request to an authorization server.
pub(super) const OAUTH_TIMEOUT_MS: u64 = 10_000;
pub(super) use crate::mcp::oauth::signed_state::CALLBACK_SUFFIX;

/// What a 401 from a server leads to.
pub(super) enum AfterUnauthorized {
    /// The token was refreshed: send again.
    Retry,
    /// A person must sign in at `url`, at the authorization server on host `issuer`.
    SignIn { url: String, issuer: String },
    /// Neither: the server fails with this error.
    Failed(McpError),
}

impl AgentHost {
    /// Server `id`'s stored sign-in, if it is for `server_url`.
    pub(super) fn mcp_credentials(&self, id: &str, server_url: &str) -> Option<Credentials> {
        let json = self.store.mcp_credentials(id).ok().flatten()?;
        match Credentials::read(&json) {
            Ok(c) if c.server_url == server_url => Some(c),
            Ok(_) => None,
            Err(e) => {
                self.log_line(
                    LogLevel::Warn,
                    &format!(
                        "mcp: stored sign-in of '{id}' unreadable: {}",
                        quoted(&e.to_string())
                    ),
                );
                None
            }
        }
    }

    pub(super) fn store_mcp_credentials(&self, id: &str, credentials: &Credentials) {
        if let Err(e) = self.store.put_mcp_credentials(id, &credentials.to_json()) {
            self.log_line(
                LogLevel::Error,
                &format!("mcp: the sign-in of '{id}' could not be stored: {e}"),
            );
        }
    }

    pub(super) fn forget_mcp_credentials(&self, id: &str) {
        let _ = self.store.delete_mcp_credentials(id);
    }

    /// Remembers the agent's own URL (`<origin>/agents/<class>/<name>`) from
    /// a request that reached it: the base of the callback URL.
    pub(super) fn note_agent_url(&self, url: &Url) {
        if let Some(path) = crate::routing::agent_path(url.path()) {
            let base = format!("{}{path}", url.origin().ascii_serialization());
            self.mcp.set_agent_url(base);
        }
    }

    /// The access token to send to `server` (refreshed first when it is
    /// about to expire), if a person signed in to it.
    pub(super) async fn mcp_bearer(
        self: &Rc<Self>,
        id: &str,
        server: &McpServer,
    ) -> Option<String> {
        if server.has_authorization() {
            return None;
        }
        let credentials = self.mcp_credentials(id, &server.url)?;
        let tokens = credentials.tokens.clone()?;
        if !tokens.needs_refresh(now_ms()) {
            return Some(tokens.access_token);
        }
        match self.refresh_mcp_tokens(id, server).await {
            Ok(fresh) => Some(fresh.access_token),
            // The old token may still pass; a 401 then asks for a sign-in.
            Err(_) => Some(tokens.access_token),
        }
    }

    /// Refreshes server `id`'s tokens (one refresh in flight per server;
    /// a second caller waits for the first's outcome).
    pub(super) async fn refresh_mcp_tokens(
        self: &Rc<Self>,
        id: &str,
        server: &McpServer,
    ) -> Result<Tokens, McpError> {
        let before = now_ms();
        while self.mcp.is_refreshing(id) {
            if now_ms().saturating_sub(before) > OAUTH_TIMEOUT_MS {
                return Err(McpError::Timeout(OAUTH_TIMEOUT_MS));
            }
            Delay::from(Duration::from_millis(25)).await;
        }
        if before != now_ms() {
            // Another caller refreshed meanwhile: its tokens are fresh.
            if let Some(tokens) = self
                .mcp_credentials(id, &server.url)
                .and_then(|c| c.tokens)
                .filter(|t| !t.needs_refresh(now_ms()))
            {
                return Ok(tokens);
            }
        }
        self.mcp.set_refreshing(id, true);
        let outcome = self.refresh_once(id, server).await;
        self.mcp.set_refreshing(id, false);
        match &outcome {
            Ok(_) => self.log_line(LogLevel::Info, &format!("mcp: tokens of '{id}' refreshed")),
            Err(e) => self.log_line(
                LogLevel::Warn,
                &format!(
                    "mcp: tokens of '{id}' not refreshed: {}",
                    quoted(&e.to_string())
                ),
            ),
        }
        outcome
    }

    async fn refresh_once(
        self: &Rc<Self>,
        id: &str,
        server: &McpServer,
    ) -> Result<Tokens, McpError> {
        let mut credentials = self
            .mcp_credentials(id, &server.url)
            .ok_or_else(|| McpError::Malformed("no sign-in to refresh".into()))?;
        let (Some(auth_server), Some(client), Some(refresh_token)) = (
            credentials.auth_server.clone(),
            credentials.client.clone(),
            credentials
                .tokens
                .as_ref()
                .and_then(|t| t.refresh_token.clone()),
        ) else {
            return Err(McpError::Malformed("no refresh token".into()));
        };
        let request = refresh(&auth_server, &client, &refresh_token, &credentials.resource);
        let reply = exchange(&request, self.mcp.hosts(), OAUTH_TIMEOUT_MS, None).await?;
        let tokens = match read_tokens(&reply, now_ms(), Some(&refresh_token)) {
            Ok(tokens) => tokens,
            Err(e) => {
                // A refused refresh token is no use any more.
                if matches!(
                    e,
                    McpError::Http {
                        status: 400..=499,
                        ..
                    }
                ) {
                    credentials.tokens = None;
                    self.store_mcp_credentials(id, &credentials);
                }
                return Err(e);
            }
        };
        credentials.tokens = Some(tokens.clone());
        self.store_mcp_credentials(id, &credentials);
        Ok(tokens)
    }

    /// Server `id` answered 401 (`challenge`: its `WWW-Authenticate`):
    /// refresh once when `may_refresh`, else start an authorization.
    pub(super) async fn mcp_unauthorized(
        self: &Rc<Self>,
        id: &str,
        server: &McpServer,
        challenge: Option<String>,
        may_refresh: bool,
    ) -> AfterUnauthorized {
        let stored = self.mcp_credentials(id, &server.url);
        let can_refresh = stored
            .as_ref()
            .and_then(|c| c.tokens.as_ref())
            .is_some_and(|t| t.refresh_token.is_some());
        if may_refresh && can_refresh && self.refresh_mcp_tokens(id, server).await.is_ok() {
            return AfterUnauthorized::Retry;
        }
        match self
            .begin_authorization(id, server, stored, challenge)
            .await
        {
            Ok((url, issuer)) => AfterUnauthorized::SignIn { url, issuer },
            Err(e) => AfterUnauthorized::Failed(e),
        }
    }

    /// Finds the authorization server, registers the agent with it if it
    /// has not yet, and keeps a new authorization's verifier and state.
    async fn begin_authorization(
        self: &Rc<Self>,
        id: &str,
        server: &McpServer,
        stored: Option<Credentials>,
        challenge: Option<String>,
    ) -> Result<(String, String), McpError> {
        let redirect_uri = match &stored {
            Some(c) => c.redirect_uri.clone(),
            None => match self.mcp.agent_url() {
                Some(base) => format!("{base}{CALLBACK_SUFFIX}"),
                None => {
                    return Err(McpError::Malformed(
                        "the server asks for a sign-in, and the agent's URL (the base of its \
                         callback) is not known until a request reaches the agent"
                            .into(),
                    ))
                }
            },
        };
        let mut credentials =
            stored.unwrap_or_else(|| Credentials::new(&server.url, &redirect_uri));
        credentials.tokens = None;
        let challenge = read_challenge(challenge.as_deref());
        // The protected resource's metadata; without it, the server's origin
        // is taken as its authorization server (as older servers expect).
        let mut issuer = None;
        for url in resource_metadata_urls(&challenge, &server.url)? {
            let reply = match exchange(&get(&url), self.mcp.hosts(), OAUTH_TIMEOUT_MS, None).await {
                Ok(reply) => reply,
                Err(refused @ McpError::Refused(_)) => return Err(refused),
                Err(_) => continue,
            };
            if (200..300).contains(&reply.status) {
                let metadata = read_resource_metadata(&reply.body)?;
                if let Some(resource) = metadata.resource {
                    crate::mcp::oauth::trust::check_resource(&resource, &server.url)?;
                    credentials.resource = resource;
                }
                credentials.scope = challenge.scope.clone().or(metadata.scopes);
                issuer = Some(metadata.authorization_server);
                break;
            }
        }
        let issuer = match issuer {
            Some(issuer) => issuer,
            None => {
                credentials.scope = challenge.scope.clone();
                let url = Url::parse(&server.url)
                    .map_err(|e| McpError::Malformed(format!("the server URL: {e}")))?;
                format!("{}/", url.origin().ascii_serialization())
            }
        };
        let issuer_host = Url::parse(&issuer)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        let mut auth_server = None;
        for url in auth_server_metadata_urls(&issuer)? {
            let reply = match exchange(&get(&url), self.mcp.hosts(), OAUTH_TIMEOUT_MS, None).await {
                Ok(reply) => reply,
                Err(refused @ McpError::Refused(_)) => return Err(refused),
                Err(_) => continue,
            };
            if (200..300).contains(&reply.status) {
                auth_server = Some(read_auth_server_metadata(&reply.body)?);
                break;
            }
        }
        let auth_server = auth_server.ok_or_else(|| {
            McpError::Malformed(format!(
                "the server asks for a sign-in, but its authorization server ({issuer}) \
                 publishes no metadata"
            ))
        })?;
        if credentials.auth_server.as_ref() != Some(&auth_server) {
            credentials.client = None;
        }
        let client = match credentials.client.clone() {
            Some(client) => client,
            None => {
                let endpoint = auth_server
                    .registration_endpoint
                    .as_deref()
                    .ok_or_else(|| {
                        McpError::Malformed(
                            "the authorization server offers no client registration".into(),
                        )
                    })?;
                let reply = exchange(
                    &registration(endpoint, &credentials.redirect_uri),
                    self.mcp.hosts(),
                    OAUTH_TIMEOUT_MS,
                    None,
                )
                .await?;
                read_registration(&reply)?
            }
        };
        let verifier = code_verifier(&secret_bytes::<32>().map_err(McpError::NoSecureRandom)?);
        let nonce = signed_state::nonce(
            &secret_bytes::<16>().map_err(McpError::NoSecureRandom)?,
            self.sign_in_key.as_deref(),
            &self.state.id().to_string(),
            id,
        );
        let state = format!("{nonce}.{id}");
        let url = authorization_url(&Authorization {
            server: &auth_server,
            client: &client,
            redirect_uri: &credentials.redirect_uri,
            challenge: &code_challenge(&verifier),
            state: &state,
            resource: &credentials.resource,
            scope: credentials.scope.as_deref(),
        })?;
        credentials.auth_server = Some(auth_server);
        credentials.client = Some(client);
        credentials.pending = Some(Pending {
            nonce,
            verifier,
            auth_url: url.clone(),
            created_at_ms: now_ms(),
            binding: None,
        });
        self.store_mcp_credentials(id, &credentials);
        self.log_line(
            LogLevel::Info,
            &format!("mcp: server '{id}' waits for a sign-in"),
        );
        // Bound to a browser: tabs are shown the start link, which hands
        // the opening browser its cookie and sends it on to `url`.
        let shown = if self.sign_in_same_browser {
            start_link(&credentials.redirect_uri, &state)
        } else {
            url
        };
        Ok((shown, issuer_host))
    }
}

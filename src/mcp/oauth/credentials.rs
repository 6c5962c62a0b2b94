//! What the agent keeps of one server's OAuth sign-in, stored as JSON (one
//! row per server, see `store::mcp_servers`): the redirect URI the client
//! was registered with, the client, the authorization server's endpoints,
//! the tokens and when the access token expires, and the authorization in
//! progress (its `state` nonce, PKCE verifier and URL) while a person signs in.

use serde::{Deserialize, Serialize};

use super::discovery::AuthServer;

/// The shape version of a stored credentials row.
pub const CREDENTIALS_VERSION: u32 = 1;
/// An access token this close to its expiry is refreshed before use (or a
/// quarter of its lifetime, if that is shorter).
pub const REFRESH_MARGIN_MS: u64 = 30_000;
/// An authorization not finished within this long is refused at the callback.
pub const PENDING_TTL_MS: u64 = 10 * 60 * 1000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthClient {
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// When the access token expires (ms since the epoch), if the server said.
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
    /// How long the access token lives (`expires_in`), in ms.
    #[serde(default)]
    pub lifetime_ms: Option<u64>,
}

impl Tokens {
    /// Whether the access token should be refreshed before use at `now_ms`.
    pub fn needs_refresh(&self, now_ms: u64) -> bool {
        let margin = self
            .lifetime_ms
            .map_or(REFRESH_MARGIN_MS, |l| REFRESH_MARGIN_MS.min(l / 4));
        self.refresh_token.is_some()
            && self
                .expires_at_ms
                .is_some_and(|at| now_ms.saturating_add(margin) >= at)
    }
}

/// An authorization a person has been asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The random part of `state` (`<nonce>.<server id>`).
    pub nonce: String,
    pub verifier: String,
    pub auth_url: String,
    pub created_at_ms: u64,
    /// The hash of the secret handed to the browser that opened the
    /// sign-in link, once one did (see `browser_binding`).
    #[serde(default)]
    pub binding: Option<String>,
}

/// One server's sign-in (see the module header).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Credentials {
    pub v: u32,
    /// The server URL the sign-in is for (a server added again with another
    /// URL starts over).
    pub server_url: String,
    pub redirect_uri: String,
    /// The `resource` tokens are asked for (RFC 8707).
    pub resource: String,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub auth_server: Option<AuthServer>,
    #[serde(default)]
    pub client: Option<OAuthClient>,
    #[serde(default)]
    pub tokens: Option<Tokens>,
    #[serde(default)]
    pub pending: Option<Pending>,
}

impl Credentials {
    pub fn new(server_url: &str, redirect_uri: &str) -> Credentials {
        Credentials {
            v: CREDENTIALS_VERSION,
            server_url: server_url.to_string(),
            redirect_uri: redirect_uri.to_string(),
            resource: server_url
                .split('#')
                .next()
                .unwrap_or(server_url)
                .to_string(),
            scope: None,
            auth_server: None,
            client: None,
            tokens: None,
            pending: None,
        }
    }

    pub fn read(json: &str) -> Result<Credentials, String> {
        let credentials: Credentials = serde_json::from_str(json).map_err(|e| e.to_string())?;
        if credentials.v > CREDENTIALS_VERSION {
            return Err(format!(
                "credentials version {} is newer than this release's",
                credentials.v
            ));
        }
        Ok(credentials)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Whether `state` answers the authorization in progress, unexpired at `now_ms`.
    pub fn pending_matches(&self, state: &str, server_id: &str, now_ms: u64) -> bool {
        let Some(pending) = &self.pending else {
            return false;
        };
        let Some((nonce, id)) = state.split_once('.') else {
            return false;
        };
        id == server_id
            && constant_time_eq(nonce.as_bytes(), pending.nonce.as_bytes())
            && now_ms.saturating_sub(pending.created_at_ms) <= PENDING_TTL_MS
    }
}

/// The server id a callback's `state` (`<nonce>.<server id>`) names.
pub fn server_of_state(state: &str) -> Option<&str> {
    let (nonce, id) = state.split_once('.')?;
    (!nonce.is_empty() && !id.is_empty() && !id.contains('.')).then_some(id)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_refreshed_shortly_before_they_expire_when_they_can_be() {
        let mut tokens = Tokens {
            access_token: "a".into(),
            refresh_token: Some("r".into()),
            expires_at_ms: Some(100_000),
            lifetime_ms: None,
        };
        assert!(!tokens.needs_refresh(60_000));
        assert!(tokens.needs_refresh(70_000));
        tokens.lifetime_ms = Some(4_000);
        assert!(
            !tokens.needs_refresh(98_000),
            "a short-lived token is used for most of its life"
        );
        assert!(tokens.needs_refresh(99_000));
        tokens.refresh_token = None;
        assert!(!tokens.needs_refresh(200_000), "nothing to refresh with");
    }

    #[test]
    fn a_state_matches_only_its_server_and_nonce_while_fresh() {
        let mut c = Credentials::new("http://h/mcp", "http://a/agents/x/y/callback");
        c.pending = Some(Pending {
            nonce: "n1".into(),
            verifier: "v".into(),
            auth_url: "http://h/authorize".into(),
            created_at_ms: 1_000,
            binding: None,
        });
        assert!(c.pending_matches("n1.demo", "demo", 2_000));
        assert!(!c.pending_matches("n2.demo", "demo", 2_000));
        assert!(!c.pending_matches("n1.other", "demo", 2_000));
        assert!(!c.pending_matches("n1.demo", "demo", 1_000 + PENDING_TTL_MS + 1));
        assert_eq!(server_of_state("n1.demo"), Some("demo"));
        assert_eq!(server_of_state("nodot"), None);
        let json = c.to_json();
        assert_eq!(Credentials::read(&json).unwrap(), c);
    }
}

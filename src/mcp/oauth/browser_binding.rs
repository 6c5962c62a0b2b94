//! A sign-in bound to the browser that started it (the author's
//! `mcp_sign_in_same_browser`), sans-I/O: the link a tab is shown
//! (`<agent>/callback?start=<state>`, the callback's own path), the one-time
//! secret that link hands the browser in a cookie scoped to the callback
//! path (`Secure; HttpOnly; SameSite=Lax`), the hash of it kept with the
//! pending sign-in, and the check of the cookie a callback brings.

use super::pkce::{base64url, sha256};

/// The query parameter of the start link (its value: the sign-in's `state`).
pub const START_PARAM: &str = "start";
/// How long the cookie lives, in seconds (a pending sign-in's own limit).
pub const COOKIE_MAX_AGE_S: u64 = super::credentials::PENDING_TTL_MS / 1000;

/// The link a tab is shown for a sign-in with `state`, whose callback is
/// `redirect_uri`: the callback path with `?start=<state>`.
pub fn start_link(redirect_uri: &str, state: &str) -> String {
    let mut url = redirect_uri
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .to_string();
    url.push('?');
    url.push_str(START_PARAM);
    url.push('=');
    url.push_str(&percent_encode(state));
    url
}

/// The name of the cookie of server `id`'s sign-in (server ids are
/// `[a-z0-9-]`, cookie-safe).
pub fn cookie_name(server_id: &str) -> String {
    format!("mcp_sign_in_{server_id}")
}

/// What is kept of `secret` with the pending sign-in.
pub fn secret_hash(secret: &str) -> String {
    base64url(&sha256(secret.as_bytes()))
}

/// Whether `presented` (the cookie's value, if the request had it) is the
/// secret whose hash is `kept`.
pub fn presented_matches(kept: &str, presented: Option<&str>) -> bool {
    let Some(presented) = presented else {
        return false;
    };
    let hash = secret_hash(presented);
    hash.len() == kept.len()
        && hash
            .bytes()
            .zip(kept.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The `Set-Cookie` value handing `secret` to the browser for `path`.
pub fn set_cookie(name: &str, secret: &str, path: &str) -> String {
    format!(
        "{name}={secret}; Path={path}; Max-Age={COOKIE_MAX_AGE_S}; Secure; HttpOnly; SameSite=Lax"
    )
}

/// The `Set-Cookie` value that removes the cookie once the sign-in is done.
pub fn clear_cookie(name: &str, path: &str) -> String {
    format!("{name}=; Path={path}; Max-Age=0; Secure; HttpOnly; SameSite=Lax")
}

/// Cookie `name`'s value in a `Cookie` request header, if present.
pub fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key.trim() == name).then(|| value.trim())
    })
}

fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_link_is_the_callback_path_with_the_state() {
        assert_eq!(
            start_link(
                "https://a.example/agents/chat-agent/r/callback",
                "n-1_x.locked"
            ),
            "https://a.example/agents/chat-agent/r/callback?start=n-1_x.locked"
        );
    }

    #[test]
    fn only_the_secret_handed_out_matches() {
        let kept = secret_hash("s3cret");
        assert!(presented_matches(&kept, Some("s3cret")));
        assert!(!presented_matches(&kept, Some("s3cret2")));
        assert!(!presented_matches(&kept, None));
    }

    #[test]
    fn the_cookie_is_read_by_name_and_scoped_to_the_path() {
        let header = "a=1; mcp_sign_in_locked=abc ; mcp_sign_in_other=zzz";
        assert_eq!(cookie_value(header, "mcp_sign_in_locked"), Some("abc"));
        assert_eq!(cookie_value(header, "mcp_sign_in_x"), None);
        let line = set_cookie("mcp_sign_in_locked", "abc", "/agents/a/r/callback");
        assert!(line.contains("Path=/agents/a/r/callback"));
        assert!(line.contains("Secure; HttpOnly; SameSite=Lax"));
    }
}

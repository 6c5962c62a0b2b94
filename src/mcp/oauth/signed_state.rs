//! A sign-in's `state` the worker can check before any Durable Object is
//! reached. With a deployment key (`AUTH_TOKEN`), the nonce of
//! `<nonce>.<server id>` is a random part followed by an HMAC-SHA256 (cut to
//! 16 bytes) of that part, the server id and the id of the object that made
//! it; the router lets a request on the callback path through its access
//! check only when that MAC verifies (a browser coming back from an
//! authorization server carries no agent token). Without a key the nonce is
//! the random part alone, and the object checks it (`agent::host::lazy`).

use super::browser_binding::START_PARAM;
use super::pkce::{base64url, sha256};

/// The path under the agent's own path that a sign-in redirects to.
pub const CALLBACK_SUFFIX: &str = "/callback";
/// Characters of the random part (16 bytes, base64url).
const RANDOM_CHARS: usize = 22;

/// The `state` (or the start link's `start`) a request on the agent's
/// callback path carries: `path` is the request's path, `param` reads its
/// query parameters.
pub fn callback_state<'a>(path: &str, param: impl Fn(&str) -> Option<&'a str>) -> Option<&'a str> {
    if !path.ends_with(CALLBACK_SUFFIX) {
        return None;
    }
    param("state").or_else(|| param(START_PARAM))
}

/// The nonce of a new sign-in of server `server_id` made by object
/// `object_id`: the random part, and its MAC under `key` if there is one.
pub fn nonce(random: &[u8; 16], key: Option<&str>, object_id: &str, server_id: &str) -> String {
    let random = base64url(random);
    match key.filter(|k| !k.is_empty()) {
        Some(key) => {
            let mac = mac(key, &random, server_id, object_id);
            format!("{random}{mac}")
        }
        None => random,
    }
}

/// Whether `state` was made by object `object_id` under `key`.
pub fn verifies(state: &str, key: &str, object_id: &str) -> bool {
    let Some((nonce, server_id)) = state.split_once('.') else {
        return false;
    };
    if key.is_empty() || nonce.len() <= RANDOM_CHARS || !nonce.is_char_boundary(RANDOM_CHARS) {
        return false;
    }
    let (random, presented) = nonce.split_at(RANDOM_CHARS);
    let expected = mac(key, random, server_id, object_id);
    expected.len() == presented.len()
        && expected
            .bytes()
            .zip(presented.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn mac(key: &str, random: &str, server_id: &str, object_id: &str) -> String {
    let message = format!("mcp-sign-in\n{object_id}\n{server_id}\n{random}");
    base64url(&hmac_sha256(key.as_bytes(), message.as_bytes())[..16])
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&sha256(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    inner.extend_from_slice(message);
    let mut outer: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    outer.extend_from_slice(&sha256(&inner));
    sha256(&outer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_state_verifies_only_for_its_object_and_key() {
        let nonce = nonce(&[7; 16], Some("k"), "obj1", "locked");
        let state = format!("{nonce}.locked");
        assert!(verifies(&state, "k", "obj1"));
        assert!(!verifies(&state, "other", "obj1"));
        assert!(!verifies(&state, "k", "obj2"));
        assert!(!verifies(&format!("{nonce}.demo"), "k", "obj1"));
        assert!(!verifies("forged.locked", "k", "obj1"));
        assert!(!verifies(&state, "", "obj1"));
        let unsigned = super::nonce(&[7; 16], None, "obj1", "locked");
        assert_eq!(unsigned.len(), RANDOM_CHARS);
        assert!(!verifies(&format!("{unsigned}.locked"), "k", "obj1"));
    }

    #[test]
    fn the_state_is_read_on_the_callback_path_only() {
        let q = |k: &str| (k == "start").then_some("s.x");
        assert_eq!(callback_state("/agents/a/r/callback", q), Some("s.x"));
        assert_eq!(callback_state("/agents/a/r/other", q), None);
    }
}

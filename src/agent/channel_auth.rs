//! Who may open a parent → child channel (`…/__chat-channel`): a request
//! that carries the deployment's channel credential in the
//! `x-durable-chat-channel` header. The child agent checks it itself, so a
//! worker that forwards `/agents/…` without looking at the path does not open
//! the channel to the world.
//!
//! The credential is the `CHANNEL_SECRET` secret when the deployment sets one.
//! Without it, the credential is the child's Durable Object id: the parent
//! computes it with `idFromName` on its binding, the child knows its own, and a
//! caller outside the deployment can derive it from the name only with the
//! namespace's own key (the agent never sends its id anywhere). Setting
//! `CHANNEL_SECRET` is the stronger choice: it does not rest on the id staying
//! private.

/// The header a parent's `chat()` puts its credential in. The demo's worker
/// entry refuses outside requests that carry it.
pub const CHANNEL_AUTH_HEADER: &str = "x-durable-chat-channel";

/// The secret (var or secret) that, when set, is the channel credential.
pub const CHANNEL_SECRET_VAR: &str = "CHANNEL_SECRET";

/// The agent `name` of Durable Object binding `binding` (the name checked
/// against the agent-name rule first): its stub, and the credential a caller
/// inside the deployment presents to it.
#[cfg(target_arch = "wasm32")]
pub fn channel_target(
    env: &worker::Env,
    binding: &str,
    name: &str,
) -> worker::Result<(worker::Stub, String)> {
    crate::routing::check_agent_name(name).map_err(worker::Error::RustError)?;
    let namespace = env.durable_object(binding)?;
    let id = namespace.id_from_name(name)?;
    let secret = super::settings::env_value(env, CHANNEL_SECRET_VAR);
    let credential = channel_credential(secret.as_deref(), &id.to_string());
    Ok((id.get_stub()?, credential))
}

/// The credential a parent sends to the child whose Durable Object id is `child_id`.
pub fn channel_credential(secret: Option<&str>, child_id: &str) -> String {
    match secret.filter(|s| !s.is_empty()) {
        Some(secret) => format!("secret:{secret}"),
        None => format!("id:{child_id}"),
    }
}

/// Whether `presented` is the credential of the agent whose id is `own_id`
/// under `secret`; compared in time independent of where they differ.
pub fn channel_allowed(presented: Option<&str>, secret: Option<&str>, own_id: &str) -> bool {
    let Some(presented) = presented else {
        return false;
    };
    let expected = channel_credential(secret, own_id);
    let (a, b) = (presented.as_bytes(), expected.as_bytes());
    let mut differ = a.len() ^ b.len();
    for (x, y) in a.iter().zip(b.iter()) {
        differ |= usize::from(x ^ y);
    }
    differ == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_deployments_credential_opens_a_channel() {
        let with_secret = channel_credential(Some("s3cret"), "abc");
        assert!(channel_allowed(Some(&with_secret), Some("s3cret"), "abc"));
        assert!(channel_allowed(
            Some(&with_secret),
            Some("s3cret"),
            "other-id"
        ));
        assert!(!channel_allowed(
            Some("secret:guess"),
            Some("s3cret"),
            "abc"
        ));
        assert!(!channel_allowed(Some("id:abc"), Some("s3cret"), "abc"));
        assert!(!channel_allowed(None, Some("s3cret"), "abc"));

        let by_id = channel_credential(None, "abc");
        assert!(channel_allowed(Some(&by_id), None, "abc"));
        assert!(channel_allowed(Some(&by_id), Some(""), "abc"));
        assert!(!channel_allowed(Some(&by_id), None, "abd"));
        assert!(!channel_allowed(Some("id:ab"), None, "abc"));
        assert!(!channel_allowed(Some(""), None, "abc"));
    }
}

//! Who may open a parent → child channel (`…/__chat-channel`) or call an
//! agent's submission API (`…/__chat-api`): a request that carries the
//! deployment's channel credential in the `x-durable-chat-channel` header.
//! The child agent checks it itself, so a worker that forwards `/agents/…`
//! without looking at the path does not open the channel to the world.
//!
//! The credential is the `CHANNEL_SECRET` secret. Without it the channel is
//! closed (every such request is refused, and a caller's `chat()` or
//! `AgentStub` fails before sending anything), unless the deployment opts in
//! with `CHANNEL_ALLOW_ID_CREDENTIAL=1` to the weaker credential of the
//! child's Durable Object id (ids are fit for logs and cookies, not secrets);
//! both cases are logged as warnings.

/// The header a parent's `chat()` puts its credential in. The demo's worker
/// entry refuses outside requests that carry it.
pub const CHANNEL_AUTH_HEADER: &str = "x-durable-chat-channel";

/// The secret (var or secret) that is the channel credential.
pub const CHANNEL_SECRET_VAR: &str = "CHANNEL_SECRET";

/// The var (`"1"`) that, with no `CHANNEL_SECRET`, accepts the child's
/// Durable Object id as the credential instead of closing the channel.
pub const CHANNEL_ID_OPT_IN_VAR: &str = "CHANNEL_ALLOW_ID_CREDENTIAL";

/// What a deployment's vars make the channel credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelPolicy {
    /// `secret:<CHANNEL_SECRET>`.
    Secret(String),
    /// `id:<the child's Durable Object id>` (explicit opt-in, no secret).
    DurableObjectId,
    /// No secret and no opt-in: nothing opens a channel.
    Closed,
}

impl ChannelPolicy {
    /// The policy of vars read through `lookup`.
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> ChannelPolicy {
        match lookup(CHANNEL_SECRET_VAR).filter(|s| !s.is_empty()) {
            Some(secret) => ChannelPolicy::Secret(secret),
            None if lookup(CHANNEL_ID_OPT_IN_VAR).as_deref() == Some("1") => {
                ChannelPolicy::DurableObjectId
            }
            None => ChannelPolicy::Closed,
        }
    }

    /// The credential a caller sends to the child whose Durable Object id
    /// is `child_id`; `None` when the channel is closed.
    pub fn credential(&self, child_id: &str) -> Option<String> {
        match self {
            ChannelPolicy::Secret(secret) => Some(format!("secret:{secret}")),
            ChannelPolicy::DurableObjectId => Some(format!("id:{child_id}")),
            ChannelPolicy::Closed => None,
        }
    }

    /// Whether `presented` is the credential of the agent whose id is
    /// `own_id`; compared in time independent of where they differ.
    pub fn allows(&self, presented: Option<&str>, own_id: &str) -> bool {
        let (Some(presented), Some(expected)) = (presented, self.credential(own_id)) else {
            return false;
        };
        let (a, b) = (presented.as_bytes(), expected.as_bytes());
        let mut differ = a.len() ^ b.len();
        for (x, y) in a.iter().zip(b.iter()) {
            differ |= usize::from(x ^ y);
        }
        differ == 0
    }

    /// The warning this policy deserves, if any.
    pub fn warning(&self) -> Option<&'static str> {
        match self {
            ChannelPolicy::Secret(_) => None,
            ChannelPolicy::DurableObjectId => Some(
                "CHANNEL_SECRET is not set and CHANNEL_ALLOW_ID_CREDENTIAL=1: the sub-agent \
                 channel and the submission API accept a Durable Object id as the credential; \
                 set CHANNEL_SECRET",
            ),
            ChannelPolicy::Closed => Some(
                "CHANNEL_SECRET is not set: the sub-agent channel and the submission API are \
                 closed (set CHANNEL_SECRET, or CHANNEL_ALLOW_ID_CREDENTIAL=1 to accept the \
                 weaker Durable Object id)",
            ),
        }
    }
}

/// The agent `name` of Durable Object binding `binding` (the name checked
/// against the agent-name rule first): its stub, and the credential a caller
/// inside the deployment presents to it. Fails when the channel is closed.
#[cfg(target_arch = "wasm32")]
pub fn channel_target(
    env: &worker::Env,
    binding: &str,
    name: &str,
) -> worker::Result<(worker::Stub, String)> {
    crate::routing::check_agent_name(name).map_err(worker::Error::RustError)?;
    let policy = ChannelPolicy::from_vars(|var| crate::agent::settings::env_value(env, var));
    if let Some(warning) = policy.warning() {
        crate::log::write(crate::log::LogLevel::Warn, warning);
    }
    let namespace = env.durable_object(binding)?;
    let id = namespace.id_from_name(name)?;
    let credential = policy.credential(&id.to_string()).ok_or_else(|| {
        worker::Error::RustError(
            "CHANNEL_SECRET is not set, so another agent cannot be reached (see the trust model)"
                .into(),
        )
    })?;
    Ok((id.get_stub()?, credential))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(secret: Option<&str>, opt_in: Option<&str>) -> ChannelPolicy {
        ChannelPolicy::from_vars(|var| match var {
            CHANNEL_SECRET_VAR => secret.map(str::to_string),
            CHANNEL_ID_OPT_IN_VAR => opt_in.map(str::to_string),
            _ => None,
        })
    }

    #[test]
    fn only_the_deployments_credential_opens_a_channel() {
        let with_secret = policy(Some("s3cret"), Some("1"));
        let sent = with_secret.credential("abc").unwrap();
        assert!(with_secret.allows(Some(&sent), "abc"));
        assert!(with_secret.allows(Some(&sent), "other-id"));
        assert!(!with_secret.allows(Some("secret:guess"), "abc"));
        assert!(
            !with_secret.allows(Some("id:abc"), "abc"),
            "the secret wins"
        );
        assert!(!with_secret.allows(None, "abc"));
        assert_eq!(with_secret.warning(), None);

        let by_id = policy(Some(""), Some("1"));
        assert_eq!(by_id, ChannelPolicy::DurableObjectId);
        let sent = by_id.credential("abc").unwrap();
        assert!(by_id.allows(Some(&sent), "abc"));
        assert!(!by_id.allows(Some(&sent), "abd"));
        assert!(!by_id.allows(Some("id:ab"), "abc"));
        assert!(!by_id.allows(Some(""), "abc"));
        assert!(by_id.warning().is_some());
    }

    #[test]
    fn without_a_secret_or_the_opt_in_the_channel_is_closed() {
        for closed in [policy(None, None), policy(Some(""), Some("yes"))] {
            assert_eq!(closed, ChannelPolicy::Closed);
            assert_eq!(closed.credential("abc"), None);
            assert!(!closed.allows(Some("id:abc"), "abc"));
            assert!(!closed.allows(Some("secret:"), "abc"));
            assert!(closed
                .warning()
                .unwrap()
                .contains("CHANNEL_SECRET is not set"));
        }
    }
}

//! What no request from outside may reach, whatever the options: the
//! internal paths (a parent's channel, another agent's API call) and the
//! internal header; and the deployment's `AUTH_TOKEN`.

use crate::agent::access::channel_auth::CHANNEL_AUTH_HEADER;
use crate::agent::access::{require_token, Refusal, RequestInfo};
use crate::routing::is_channel_path;

/// The routing-level check, before any agent is woken: the internal paths
/// (a parent's channel, another agent's API call) and the internal header
/// are never accepted from outside (the agent checks their credential as
/// well); with `token` (`AUTH_TOKEN`) set, the request must carry it.
pub fn refuse_from_outside(request: &RequestInfo, token: Option<&str>) -> Result<(), Refusal> {
    if is_channel_path(&request.path) {
        return Err(Refusal::forbidden("internal endpoint"));
    }
    // The channel credential is only ever sent Durable Object to Durable
    // Object; an outside request carrying the header is refused.
    if request.header(CHANNEL_AUTH_HEADER).is_some() {
        return Err(Refusal::forbidden("internal header"));
    }
    require_token(request, token.filter(|t| !t.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &str, query: &[(&str, &str)], headers: &[(&str, &str)]) -> RequestInfo {
        RequestInfo::new(path, query, headers)
    }

    #[test]
    fn internal_paths_and_the_internal_header_are_refused_token_or_not() {
        let status = |r: &RequestInfo, token| refuse_from_outside(r, token).map_err(|e| e.reason);
        let channel = request(
            "/agents/chat-agent/a/__chat-channel",
            &[("token", "t")],
            &[],
        );
        assert_eq!(status(&channel, Some("t")), Err("internal endpoint".into()));
        let api = request("/agents/chat-agent/a/__chat-api", &[], &[]);
        assert_eq!(status(&api, None), Err("internal endpoint".into()));
        let header = request(
            "/agents/chat-agent/a",
            &[],
            &[(CHANNEL_AUTH_HEADER, "id:x")],
        );
        assert_eq!(status(&header, None), Err("internal header".into()));
        let plain = request("/agents/chat-agent/a", &[], &[]);
        assert_eq!(status(&plain, None), Ok(()));
        assert_eq!(
            status(&plain, Some("")),
            Ok(()),
            "an empty token is no token"
        );
        assert_eq!(
            refuse_from_outside(&plain, Some("t")).map_err(|e| e.status),
            Err(401)
        );
    }
}

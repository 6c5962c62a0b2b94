//! Maps request paths to agents: `/agents/<kebab(binding)>/<name>[/…]`, the
//! camel→kebab rule of the client, which binding a namespace names, the one
//! rule an instance name follows (for routing and for a sub-agent `chat()`),
//! and the path of a parent agent's channel to a child.

/// Longest instance name, in bytes.
pub const MAX_AGENT_NAME_BYTES: usize = 128;

/// An instance name is 1 to 128 of the characters a URL path carries as
/// they are (`A-Z a-z 0-9 - . _ ~`), and not `.` or `..`: it is put into a
/// path unencoded, so it can never add a segment, a query or a fragment.
/// The error says why without quoting the name.
pub fn check_agent_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("an agent name is empty".into());
    }
    if name.len() > MAX_AGENT_NAME_BYTES {
        return Err(format!(
            "an agent name is too long: {} bytes (limit {MAX_AGENT_NAME_BYTES})",
            name.len()
        ));
    }
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    if !plain || name == "." || name == ".." {
        return Err(format!(
            "an agent name may hold only A-Z a-z 0-9 - . _ ~ (1 to {MAX_AGENT_NAME_BYTES}), and not be . or .."
        ));
    }
    Ok(())
}

/// Path suffix of the parent → child channel of a sub-agent `chat()` (an
/// internal endpoint: the worker refuses it from outside).
pub const CHANNEL_PATH: &str = "/__chat-channel";

/// Path suffix of another agent's calls into this one (`agent::remote`:
/// submissions, saved messages, continuations), an internal endpoint too.
pub const API_PATH: &str = "/__chat-api";

/// Whether a request path is internal: a parent agent's channel or another
/// agent's API call (both carry the deployment's credential; the worker
/// refuses them from outside).
pub fn is_channel_path(path: &str) -> bool {
    path.ends_with(CHANNEL_PATH) || path.ends_with(API_PATH)
}

/// The URL another agent calls for agent `binding`/`name`'s API.
pub fn api_url(binding: &str, name: &str) -> String {
    format!("https://agent/agents/{}/{name}{API_PATH}", kebab(binding))
}

/// The URL a parent agent opens to the channel of child `binding`/`name`
/// (the host part is ignored by a Durable Object stub).
pub fn channel_url(binding: &str, name: &str) -> String {
    format!(
        "https://agent/agents/{}/{name}{CHANNEL_PATH}",
        kebab(binding)
    )
}

/// The client's `kebab()`: `MyAgent`→`my-agent`, `CHAT_AGENT`→`chat-agent`.
pub fn kebab(name: &str) -> String {
    if name.chars().all(|c| !c.is_ascii_lowercase()) {
        return name.to_ascii_lowercase().replace('_', "-");
    }
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else if c == '_' {
            out.push('-');
        } else {
            out.push(c);
        }
    }
    out.trim_matches('-').to_string()
}

#[derive(Debug, PartialEq, Eq)]
pub enum Route<'a> {
    /// `/agents/<namespace>/<name>…` with the binding it names.
    Agent {
        binding: &'a str,
        name: String,
    },
    /// Under `/agents/` but no such namespace (or no name).
    BadAgentPath,
    NotAgent,
}

/// The path prefix agents are served under unless the router is told
/// another (`RouteOptions::prefix`).
pub const DEFAULT_PREFIX: &str = "agents";

/// `<namespace>` and non-empty `<name>` of `/agents/<namespace>/<name>[/…]`:
/// `None` outside `/agents/`, `Some(None)` under it without both.
fn agent_segments(path: &str) -> Option<Option<(&str, &str)>> {
    agent_segments_under(path, DEFAULT_PREFIX).map(|found| found.map(|(ns, name, _)| (ns, name)))
}

/// [`agent_segments`] under `prefix` (one or more segments, `api/agents`),
/// with what follows the name (`""` or `/…`, the query not included).
fn agent_segments_under<'a>(
    path: &'a str,
    prefix: &str,
) -> Option<Option<(&'a str, &'a str, &'a str)>> {
    let mut rest = path.trim_start_matches('/');
    for segment in prefix.trim_matches('/').split('/') {
        let (head, tail) = rest.split_once('/').unwrap_or((rest, ""));
        if head != segment {
            return None;
        }
        rest = tail;
    }
    let mut parts = rest.splitn(3, '/');
    Some(match (parts.next(), parts.next()) {
        (Some(namespace), Some(name)) if check_agent_name(name).is_ok() => {
            let tail = &rest[namespace.len() + 1 + name.len()..];
            Some((namespace, name, tail))
        }
        _ => None,
    })
}

/// The instance `<name>` a request path addresses, if any.
pub fn instance_name(path: &str) -> Option<String> {
    agent_segments(path)
        .flatten()
        .map(|(_, name)| name.to_string())
}

/// The path of the agent a request path addresses, `/agents/<kebab>/<name>`.
pub fn agent_path(path: &str) -> Option<String> {
    agent_segments(path)
        .flatten()
        .map(|(namespace, name)| format!("/agents/{namespace}/{name}"))
}

pub fn route<'a>(path: &str, bindings: &[&'a str]) -> Route<'a> {
    route_under(path, DEFAULT_PREFIX, bindings).0
}

/// [`route`] under path prefix `prefix`; with an agent, the path the agent
/// itself is reached at (`/agents/<kebab>/<name>[/…]`, whatever the prefix).
pub fn route_under<'a>(path: &str, prefix: &str, bindings: &[&'a str]) -> (Route<'a>, String) {
    let (namespace, name, tail) = match agent_segments_under(path, prefix) {
        None => return (Route::NotAgent, String::new()),
        Some(None) => return (Route::BadAgentPath, String::new()),
        Some(Some(segments)) => segments,
    };
    match bindings.iter().find(|b| kebab(b) == namespace) {
        Some(binding) => (
            Route::Agent {
                binding,
                name: name.to_string(),
            },
            format!("/{DEFAULT_PREFIX}/{namespace}/{name}{tail}"),
        ),
        None => (Route::BadAgentPath, String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_other_than_agents_routes_to_the_agents_own_path() {
        let bindings = ["ChatAgent"];
        let (found, inner) =
            route_under("/api/v1/chat-agent/r1/get-messages", "/api/v1/", &bindings);
        assert_eq!(
            found,
            Route::Agent {
                binding: "ChatAgent",
                name: "r1".into()
            }
        );
        assert_eq!(inner, "/agents/chat-agent/r1/get-messages");
        assert_eq!(
            route_under("/api/v1/chat-agent/r1", "api/v1", &bindings).1,
            "/agents/chat-agent/r1"
        );
        assert_eq!(
            route_under("/agents/chat-agent/r1", "api/v1", &bindings).0,
            Route::NotAgent
        );
        assert_eq!(
            route_under("/api/v2/chat-agent/r1", "api/v1", &bindings).0,
            Route::NotAgent
        );
        assert_eq!(
            route_under("/api/v1/nope/r1", "api/v1", &bindings).0,
            Route::BadAgentPath
        );
        assert_eq!(
            route_under("/api/v1/chat-agent/..", "api/v1", &bindings).0,
            Route::BadAgentPath
        );
    }

    #[test]
    fn kebab_matches_the_client_rule() {
        assert_eq!(kebab("ChatAgent"), "chat-agent");
        assert_eq!(kebab("MyAgent"), "my-agent");
        assert_eq!(kebab("CHAT_AGENT"), "chat-agent");
        assert_eq!(kebab("Coordinator"), "coordinator");
    }

    #[test]
    fn agent_paths_route_to_their_binding_and_name() {
        let bindings = ["ChatAgent", "Coordinator"];
        assert_eq!(
            route("/agents/chat-agent/room-1/get-messages", &bindings),
            Route::Agent {
                binding: "ChatAgent",
                name: "room-1".into()
            }
        );
        assert_eq!(route("/agents/nope/room", &bindings), Route::BadAgentPath);
        assert_eq!(route("/agents/chat-agent", &bindings), Route::BadAgentPath);
        assert_eq!(route("/", &bindings), Route::NotAgent);
        assert_eq!(
            instance_name("/agents/chat-agent/room-1/get-messages").as_deref(),
            Some("room-1")
        );
        assert_eq!(instance_name("/agents/chat-agent/"), None);
    }

    #[test]
    fn one_name_rule_refuses_names_that_would_change_the_url() {
        for good in ["room-1", "kid_2", "a.b", "x~y", &"n".repeat(128)] {
            assert!(check_agent_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "x?y=1",
            "x#frag",
            "a/b",
            "../chat-agent/victim",
            "a b",
            "%2e",
            "é",
            &"n".repeat(129),
        ] {
            let error = check_agent_name(bad).unwrap_err();
            assert!(
                bad.len() < 3 || !error.contains(bad),
                "{error} quotes {bad}"
            );
        }
        let bindings = ["ChatAgent"];
        assert_eq!(
            route("/agents/chat-agent/a%20b", &bindings),
            Route::BadAgentPath
        );
        assert_eq!(
            route("/agents/chat-agent/..", &bindings),
            Route::BadAgentPath
        );
        assert_eq!(instance_name("/agents/chat-agent/a%3Fb"), None);
    }

    #[test]
    fn a_channel_url_routes_to_its_child_and_is_known_as_a_channel() {
        let url = channel_url("ChatAgent", "kid-1");
        assert_eq!(url, "https://agent/agents/chat-agent/kid-1/__chat-channel");
        let path = url.trim_start_matches("https://agent");
        assert!(is_channel_path(path));
        assert!(!is_channel_path("/agents/chat-agent/kid-1"));
        assert_eq!(
            route(path, &["ChatAgent"]),
            Route::Agent {
                binding: "ChatAgent",
                name: "kid-1".into()
            }
        );
    }
}

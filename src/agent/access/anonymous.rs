//! Anonymous access, safe by default: the default `authorize`
//! (`default_authorize`) and what it decides beyond the `AUTH_TOKEN` check.
//! With a real model configured (the Workers AI binding, or an
//! `OPENAI_BASE_URL` whose host is not loopback; never the scripted model) and no access check (no
//! `AUTH_TOKEN`, no `authorize` of the author's own), every request from
//! outside is refused unless `ALLOW_ANONYMOUS` opts in (`1` or `true`, read
//! into `AgentSettings::allow_anonymous`). Owns the
//! loopback/real classification of a model URL, the refusal's text and the
//! warning logged once per isolate.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::agent::access::{require_token, Refusal, RequestInfo};
use crate::agent::settings::AgentSettings;

/// The start of the refusal's text (status 403).
pub const ANONYMOUS_REFUSAL_PREFIX: &str = "anonymous access is off";

/// Whether a model base URL points at this machine (127.0.0.0/8, `::1`,
/// `localhost`): local development with a scripted or local model. Any
/// other host, private addresses included, and a URL that does not parse
/// as `http(s)` count as a real model (the check fails closed).
pub fn is_loopback_url(base_url: &str) -> bool {
    let Ok(url) = url::Url::parse(base_url.trim()) else {
        return false;
    };
    if !matches!(url.scheme(), "http" | "https") {
        return false;
    }
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => is_loopback_v6(ip),
        None => false,
    }
}

fn is_loopback_v6(ip: Ipv6Addr) -> bool {
    ip.is_loopback()
        || ip
            .to_ipv4_mapped()
            .is_some_and(|v4: Ipv4Addr| v4.is_loopback())
}

/// The real model these settings call, named for the log (`None`: no
/// model, the scripted one, or one on this machine).
pub fn real_model(settings: &AgentSettings) -> Option<String> {
    if settings.scripted_model {
        return None;
    }
    if let Some(binding) = &settings.workers_ai_binding {
        return Some(format!("the Workers AI binding `{binding}`"));
    }
    if let Some(base_url) = settings.anthropic_base_url.as_deref().map(str::trim) {
        if !base_url.is_empty() && !is_loopback_url(base_url) {
            let host = url::Url::parse(base_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string));
            return Some(format!(
                "ANTHROPIC_BASE_URL at {}",
                host.unwrap_or_else(|| "an address that does not parse".into())
            ));
        }
    }
    let base_url = settings.base_url.as_deref().map(str::trim)?;
    if base_url.is_empty() || is_loopback_url(base_url) {
        return None;
    }
    let host = url::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string));
    Some(match host {
        Some(host) => format!("OPENAI_BASE_URL at {host}"),
        None => "an OPENAI_BASE_URL that does not parse as a URL".to_string(),
    })
}

/// Why a request is refused when anonymous access is off (sent with 403).
pub fn anonymous_refusal() -> Refusal {
    Refusal::forbidden(&format!(
        "{ANONYMOUS_REFUSAL_PREFIX}: this agent calls a real model and no access check is \
         configured. Set the AUTH_TOKEN secret (npx wrangler secret put AUTH_TOKEN) and send it \
         as ?token=, or set ALLOW_ANONYMOUS = \"1\" under [vars] in wrangler.toml to let anyone \
         connect."
    ))
}

/// The default `AgentDefinition::authorize` (and the router's check before
/// any agent is reached), for an author's own hook to call as well: a
/// browser request from another origin is refused unless `ALLOWED_ORIGINS`
/// names it ([`check_origin`](crate::agent::access::check_origin)); with a
/// non-empty `AUTH_TOKEN` the request must carry it
/// (`?token=` or `Authorization: Bearer`); without one, a request is
/// refused (403, `anonymous access is off: …`) when the settings call a
/// real model and `ALLOW_ANONYMOUS` is not set, and let through otherwise
/// (no model, or a model on this machine: local development).
pub fn default_authorize(request: &RequestInfo, settings: &AgentSettings) -> Result<(), Refusal> {
    crate::agent::access::check_origin(request, &settings.allowed_origins)?;
    let token = settings.auth_token.as_deref().filter(|t| !t.is_empty());
    if token.is_some() {
        return require_token(request, token);
    }
    match real_model(settings) {
        None => Ok(()),
        Some(model) if settings.allow_anonymous => {
            log_once(
                &OPTED_IN_LOGGED,
                &format!(
                    "anonymous access is on (ALLOW_ANONYMOUS): anyone who reaches this worker \
                     may connect and spend calls to the real model ({model}). \
                     (Logged once per isolate.)"
                ),
            );
            Ok(())
        }
        Some(model) => {
            log_once(
                &REFUSAL_LOGGED,
                &format!(
                    "anonymous access is off: the agent calls a real model ({model}) and has no \
                     access check, so requests from outside (WebSocket upgrades, get-messages, \
                     the agent's routes) are refused with 403. Set the AUTH_TOKEN secret \
                     (npx wrangler secret put AUTH_TOKEN), write an `authorize` of your own, or \
                     set ALLOW_ANONYMOUS=1 under [vars] in wrangler.toml to let anyone connect \
                     and spend model calls. (Logged once per isolate.)"
                ),
            );
            Err(anonymous_refusal())
        }
    }
}

static REFUSAL_LOGGED: AtomicBool = AtomicBool::new(false);
static OPTED_IN_LOGGED: AtomicBool = AtomicBool::new(false);

/// Logs `line` as a warning the first time `flag` is seen in this isolate;
/// later calls are quiet.
fn log_once(flag: &AtomicBool, line: &str) {
    if !flag.swap(true, Ordering::Relaxed) {
        crate::log::write(crate::log::LogLevel::Warn, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::settings::Vars;

    #[test]
    fn loopback_hosts_are_local_development() {
        for url in [
            "http://127.0.0.1:8788/v1",
            "http://127.8.9.10/v1",
            "https://localhost/v1",
            "http://LocalHost:11434/v1",
            "http://[::1]:8788/v1",
            "http://[::ffff:127.0.0.1]/v1",
            " http://127.0.0.1:9/v1 ",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
    }

    #[test]
    fn any_other_host_or_garbage_is_a_real_model() {
        for url in [
            "https://api.openai.com/v1",
            "http://10.0.0.5:8000/v1",
            "http://192.168.1.20/v1",
            "http://172.16.0.1/v1",
            "http://169.254.1.1/v1",
            "http://0.0.0.0:8788/v1",
            "http://[fe80::1]/v1",
            "http://[::]/v1",
            "http://[2001:db8::1]/v1",
            "http://localhost.example.com/v1",
            "http://localhost@api.openai.com/v1",
            "http://127.0.0.1.nip.io/v1",
            "localhost:8788",
            "not a url",
            "",
            "file:///tmp/model",
            "ftp://127.0.0.1/v1",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }

    #[test]
    fn allow_anonymous_takes_1_or_true() {
        let opts_in = |value| settings(&[("ALLOW_ANONYMOUS", value)]).allow_anonymous;
        assert!(opts_in("1"));
        assert!(opts_in(" TRUE "));
        assert!(!opts_in("0"));
        assert!(!opts_in("yes"));
        assert!(!opts_in(""));
    }

    fn settings(vars: &[(&str, &str)]) -> AgentSettings {
        let lookup = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        AgentSettings::from_vars(&Vars(&lookup))
    }

    fn status(vars: &[(&str, &str)], token: Option<&str>) -> Result<(), u16> {
        let request = RequestInfo {
            path: "/agents/chat-agent/a".into(),
            query: token
                .map(|t| vec![("token".to_string(), t.to_string())])
                .unwrap_or_default(),
            headers: vec![],
        };
        default_authorize(&request, &settings(vars)).map_err(|r| r.status)
    }

    #[test]
    fn a_real_model_without_an_access_check_refuses_anonymous_requests() {
        let real = ("OPENAI_BASE_URL", "https://api.openai.com/v1");
        assert_eq!(status(&[real], None), Err(403));
        let binding = ("MODEL_PROVIDER", "workers-ai");
        assert_eq!(status(&[binding], None), Err(403));
        let refusal = anonymous_refusal().reason;
        assert!(
            refusal.starts_with("anonymous access is off: "),
            "{refusal}"
        );
        assert!(
            refusal.contains("AUTH_TOKEN") && refusal.contains("ALLOW_ANONYMOUS"),
            "{refusal}"
        );
    }

    #[test]
    fn a_token_or_the_opt_in_or_a_loopback_model_lets_requests_in() {
        let real = ("OPENAI_BASE_URL", "https://api.openai.com/v1");
        assert_eq!(status(&[real, ("ALLOW_ANONYMOUS", "1")], None), Ok(()));
        assert_eq!(status(&[real, ("AUTH_TOKEN", "s3")], Some("s3")), Ok(()));
        assert_eq!(status(&[real, ("AUTH_TOKEN", "s3")], None), Err(401));
        assert_eq!(
            status(
                &[real, ("AUTH_TOKEN", "s3"), ("ALLOW_ANONYMOUS", "1")],
                None
            ),
            Err(401),
            "a configured token is still required"
        );
        let local = ("OPENAI_BASE_URL", "http://127.0.0.1:8788/v1");
        assert_eq!(status(&[local], None), Ok(()));
        assert_eq!(status(&[], None), Ok(()), "no model: nothing to spend");
        let scripted = ("MODEL_PROVIDER", "scripted");
        assert_eq!(
            status(&[real, scripted], None),
            Ok(()),
            "the scripted model spends nothing"
        );
    }
}

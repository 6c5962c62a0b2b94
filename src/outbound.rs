//! The outbound host policy: which hosts the agent may fetch (or have its
//! model's provider fetch) on someone else's behalf — an MCP server's URL
//! and the endpoint an HTTP+SSE server hands back, the OAuth documents and
//! endpoints a sign-in discovers, a file link. Refused unless the author
//! allows them (`OUTBOUND_ALLOW_HOSTS`, or `OutboundHosts::allow` in code):
//! every bare IP literal (loopback, private, link-local, CGNAT, `0.0.0.0`,
//! the cloud metadata address, and public ones too), `localhost` and
//! `*.localhost`, and the cloud metadata names. URLs are read as the URL
//! standard reads them (`http://2130706433/` is `127.0.0.1`). Names are not
//! resolved: a public name that points at a private address is the
//! runtime network's concern, not this check's.

use std::net::{Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// The variable an operator lists allowed hosts in.
pub const OUTBOUND_ALLOW_HOSTS_VAR: &str = "OUTBOUND_ALLOW_HOSTS";

/// The longest URL the agent fetches on someone's behalf, in bytes.
pub const MAX_OUTBOUND_URL_BYTES: usize = 2048;

/// Names that reach a cloud provider's instance metadata.
const METADATA_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
];

/// The hosts the author allows besides public names (see the module header).
/// An entry is a host (`127.0.0.1`, `[::1]`, `mcp.internal`), a host and
/// port (`127.0.0.1:8790`), a suffix (`*.corp.example`) or `*` (any host).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboundHosts {
    allowed: Vec<String>,
}

impl OutboundHosts {
    /// The comma-separated entries of `list` (as `OUTBOUND_ALLOW_HOSTS` gives them).
    pub fn from_list(list: &str) -> OutboundHosts {
        list.split(',')
            .fold(OutboundHosts::default(), |hosts, entry| hosts.allow(entry))
    }

    /// Allows `entry` as well (a host, `host:port`, `*.suffix` or `*`).
    pub fn allow(mut self, entry: &str) -> OutboundHosts {
        let entry = entry.trim().trim_end_matches('.').to_ascii_lowercase();
        if !entry.is_empty() && !self.allowed.contains(&entry) {
            self.allowed.push(entry);
        }
        self
    }

    /// The entries allowed.
    pub fn allowed(&self) -> &[String] {
        &self.allowed
    }

    /// Refuses `url` (`what`: how the refusal names it) unless it is an
    /// `http(s)` URL within `MAX_OUTBOUND_URL_BYTES` whose host is a public
    /// name or allowed.
    pub fn check(&self, url: &str, what: &str) -> Result<(), String> {
        let refused = |why: &str| format!("the {what} is refused: {why}");
        if url.len() > MAX_OUTBOUND_URL_BYTES {
            return Err(refused(&format!(
                "longer than {MAX_OUTBOUND_URL_BYTES} bytes"
            )));
        }
        let parsed = Url::parse(url.trim()).map_err(|_| refused("not a URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(refused("not an http(s) URL"));
        }
        let Some(host) = parsed.host() else {
            return Err(refused("it names no host"));
        };
        let Some(kind) = restricted(&host) else {
            return Ok(());
        };
        let shown = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
        if self.admits(&shown, parsed.port_or_known_default()) {
            return Ok(());
        }
        Err(refused(&format!(
            "{shown} is {kind}; the deployment allows it with {OUTBOUND_ALLOW_HOSTS_VAR}"
        )))
    }

    fn admits(&self, host: &str, port: Option<u16>) -> bool {
        let host = host.trim_end_matches('.');
        let with_port = port.map(|p| format!("{host}:{p}"));
        self.allowed.iter().any(|entry| {
            entry == "*"
                || entry == host
                || with_port.as_deref() == Some(entry.as_str())
                || entry
                    .strip_prefix("*.")
                    .is_some_and(|suffix| host.ends_with(&format!(".{suffix}")))
        })
    }
}

/// What kind of host `host` is when it is one the policy refuses by default.
fn restricted(host: &Host<&str>) -> Option<&'static str> {
    match host {
        Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if name == "localhost" || name.ends_with(".localhost") {
                Some("a loopback name")
            } else if METADATA_NAMES.contains(&name.as_str()) {
                Some("a cloud metadata name")
            } else {
                None
            }
        }
        Host::Ipv4(ip) => Some(ipv4_kind(*ip)),
        Host::Ipv6(ip) => Some(ipv6_kind(*ip)),
    }
}

fn ipv4_kind(ip: Ipv4Addr) -> &'static str {
    let [a, b, ..] = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) {
        "the cloud metadata address"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_unspecified() {
        "the unspecified address"
    } else if ip.is_private() {
        "a private address"
    } else if ip.is_link_local() {
        "a link-local address"
    } else if a == 100 && (64..128).contains(&b) {
        "a shared (CGNAT) address"
    } else {
        "a bare IP address"
    }
}

fn ipv6_kind(ip: Ipv6Addr) -> &'static str {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return ipv4_kind(v4);
    }
    let first = ip.segments()[0];
    if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_unspecified() {
        "the unspecified address"
    } else if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        "the cloud metadata address"
    } else if first & 0xfe00 == 0xfc00 {
        "a private address"
    } else if first & 0xffc0 == 0xfe80 {
        "a link-local address"
    } else {
        "a bare IP address"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(hosts: &OutboundHosts, url: &str) -> String {
        hosts
            .check(url, "MCP server URL")
            .expect_err(url)
            .to_string()
    }

    #[test]
    fn public_names_pass_and_every_kind_of_local_or_bare_address_is_refused() {
        let none = OutboundHosts::default();
        for good in [
            "https://mcp.example.com/mcp",
            "http://mcp.example.com:8080/x",
            "https://localhost.example.com/",
        ] {
            assert_eq!(none.check(good, "URL"), Ok(()), "{good}");
        }
        for (url, kind) in [
            ("http://127.0.0.1:8790/mcp", "a loopback address"),
            ("http://2130706433/", "a loopback address"),
            ("http://0x7f.1/", "a loopback address"),
            ("http://[::1]/", "a loopback address"),
            ("http://[::ffff:127.0.0.1]/", "a loopback address"),
            ("http://localhost:8787/", "a loopback name"),
            ("http://LocalHost./", "a loopback name"),
            ("http://api.localhost/", "a loopback name"),
            ("http://10.1.2.3/", "a private address"),
            ("http://172.16.0.1/", "a private address"),
            ("http://192.168.1.1/", "a private address"),
            ("http://[fd12::1]/", "a private address"),
            ("http://169.254.10.1/", "a link-local address"),
            ("http://[fe80::1]/", "a link-local address"),
            ("http://100.64.0.1/", "a shared (CGNAT) address"),
            ("http://0.0.0.0:8787/", "the unspecified address"),
            (
                "http://169.254.169.254/latest/",
                "the cloud metadata address",
            ),
            ("http://[fd00:ec2::254]/", "the cloud metadata address"),
            (
                "http://metadata.google.internal/computeMetadata/v1/",
                "a cloud metadata name",
            ),
            ("https://8.8.8.8/", "a bare IP address"),
        ] {
            let err = refusal(&none, url);
            assert!(err.starts_with("the MCP server URL is refused: "), "{err}");
            assert!(err.contains(kind), "{url}: {err}");
            assert!(err.contains(OUTBOUND_ALLOW_HOSTS_VAR), "{err}");
        }
        for (url, why) in [
            ("javascript:alert(1)", "not an http(s) URL"),
            ("file:///etc/passwd", "not an http(s) URL"),
            ("nonsense", "not a URL"),
        ] {
            assert!(refusal(&none, url).contains(why), "{url}");
        }
        let long = format!(
            "https://mcp.example.com/{}",
            "a".repeat(MAX_OUTBOUND_URL_BYTES)
        );
        assert!(refusal(&none, &long).contains("longer than 2048 bytes"));
    }

    #[test]
    fn the_author_allows_hosts_ports_suffixes_or_everything() {
        let hosts = OutboundHosts::from_list(" 127.0.0.1 , LOCALHOST:8787,*.corp.internal,[::1]");
        assert_eq!(hosts.check("http://127.0.0.1:9/x", "URL"), Ok(()));
        assert_eq!(hosts.check("http://localhost:8787/", "URL"), Ok(()));
        assert!(hosts.check("http://localhost:8788/", "URL").is_err());
        assert_eq!(hosts.check("http://[::1]:3/", "URL"), Ok(()));
        assert!(hosts.check("http://10.0.0.1/", "URL").is_err());
        let metadata = OutboundHosts::default().allow("*.internal");
        assert_eq!(
            metadata.check("http://metadata.google.internal/", "URL"),
            Ok(())
        );
        let any = OutboundHosts::from_list("*");
        assert_eq!(any.check("http://169.254.169.254/", "URL"), Ok(()));
        assert!(any.check("ftp://example.com/", "URL").is_err());
        assert!(OutboundHosts::from_list(" , ").allowed().is_empty());
    }
}

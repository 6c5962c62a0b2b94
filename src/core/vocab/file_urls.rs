//! What a `file` part of a message may point at: a `data:` URL that is well
//! formed and declares the part's own media type, or an `http(s)` link
//! (which the model sees as a text note unless the deployment allows its
//! host). Anything else is refused when the message is admitted, before it
//! is stored: a file the provider cannot read would fail every later
//! request that carries the message.

use serde_json::{Map, Value};

use crate::model::files::link_host;

/// Why the `file` part `part` cannot be admitted, if it cannot (the text
/// never quotes the URL).
pub fn file_part_error(part: &Map<String, Value>) -> Option<String> {
    let Some(url) = part.get("url").and_then(Value::as_str) else {
        return Some("has no url".into());
    };
    let Some(media_type) = part.get("mediaType").and_then(Value::as_str) else {
        return Some("has no mediaType".into());
    };
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("data") => data_url_error(&url[5..], media_type),
        Some("http" | "https") => link_host(url)
            .is_none()
            .then(|| "has a link without a host".into()),
        _ => Some("has a url that is neither a data: URL nor an http(s) link".into()),
    }
}

/// `rest` is what follows `data:`: `<media type>[;param…][;base64],<data>`.
fn data_url_error(rest: &str, media_type: &str) -> Option<String> {
    let Some((header, payload)) = rest.split_once(',') else {
        return Some("has a malformed data: URL (no comma)".into());
    };
    let mut fields = header.split(';');
    let declared = fields.next().unwrap_or_default().trim();
    let base64 = fields.any(|f| f.trim().eq_ignore_ascii_case("base64"));
    let essence = |t: &str| {
        t.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    };
    if declared.is_empty() || essence(declared) != essence(media_type) {
        return Some("has a data: URL whose media type is not the part's mediaType".into());
    }
    if base64 && !is_base64(payload) {
        return Some("has a malformed data: URL (its base64 does not decode)".into());
    }
    if !base64
        && payload
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return Some("has a malformed data: URL (unescaped whitespace)".into());
    }
    None
}

/// Standard base64 with its padding, as providers decode it.
fn is_base64(payload: &str) -> bool {
    let bytes = payload.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return false;
    }
    let body = payload.trim_end_matches('=');
    payload.len() - body.len() <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(url: &str, media_type: &str) -> Option<String> {
        let part = json!({"type": "file", "url": url, "mediaType": media_type});
        file_part_error(part.as_object().unwrap())
    }

    #[test]
    fn a_well_formed_data_url_of_the_parts_type_and_links_are_admitted() {
        assert_eq!(
            error("data:image/png;base64,iVBORw0KGgo=", "image/png"),
            None
        );
        assert_eq!(
            error("DATA:Image/PNG;base64,iVBORw0KGgo=", "image/png"),
            None
        );
        assert_eq!(
            error(
                "data:text/plain;charset=utf-8,hi%20there",
                "text/plain; charset=utf-8"
            ),
            None
        );
        assert_eq!(error("https://example.com/cat.jpg", "image/jpeg"), None);
        assert_eq!(error("http://user@[::1]:8080/a", "image/jpeg"), None);
    }

    #[test]
    fn malformed_mismatched_and_other_urls_are_refused_without_quoting_them() {
        for (url, media_type, why) in [
            (
                "data:image/png;base64,not base64!",
                "image/png",
                "does not decode",
            ),
            ("data:image/png;base64,abc", "image/png", "does not decode"),
            ("data:image/png;base64", "image/png", "no comma"),
            (
                "data:text/html;base64,PGI+",
                "image/png",
                "not the part's mediaType",
            ),
            (
                "data:;base64,iVBORw0KGgo=",
                "image/png",
                "not the part's mediaType",
            ),
            ("file:///etc/passwd", "text/plain", "neither"),
            ("javascript:alert(1)", "text/plain", "neither"),
            // Read as the URL standard reads it (`https:///h` is host `h`).
            ("https://", "image/png", "without a host"),
            ("http://:80/x", "image/png", "without a host"),
        ] {
            let text = error(url, media_type).unwrap_or_default();
            assert!(text.contains(why), "{url}: {text}");
            assert!(!text.contains(url), "{text}");
        }
    }
}

//! Files a user attached to a message (AI SDK `file` parts), as each
//! provider takes them. OpenAI-compatible Chat Completions: the message's
//! content becomes an array of parts — the text, then per file an
//! `image_url` part for an image (`data:` or `https:` URL), a `file` part
//! (`filename`, `file_data`) for any other file held in a `data:` URL, and a
//! text note naming the file and its link for any other file given by link
//! (Chat Completions takes no file by URL). Workers AI's binding is given
//! each file as such a note, except images when the deployment turns them on
//! (`WORKERS_AI_IMAGES=1`, for a vision model): those go as `image_url`
//! parts, as for Chat Completions. Before any of that, a file given by an
//! `http(s)` link whose host the deployment does not allow becomes a text note
//! (`keep_allowed_links`): the provider never fetches a link a user chose,
//! and never one the outbound host policy refuses (`crate::outbound`: a
//! loopback, private or metadata address, a bare IP) even on a listed host.

use serde_json::{json, Value};

use super::{ModelFile, ModelMessage, ModelRequest};
use crate::outbound::OutboundHosts;

/// Turns every file of `request` given by an `http(s)` link whose host is
/// not one of `hosts` (lower-case names, matched exactly), or that
/// `outbound` refuses, into a text note after its message's text. `data:`
/// files are kept.
pub fn keep_allowed_links(request: &mut ModelRequest, hosts: &[String], outbound: &OutboundHosts) {
    for message in &mut request.messages {
        let ModelMessage::User { content, files } = message else {
            continue;
        };
        let mut noted = Vec::new();
        let mut kept = Vec::with_capacity(files.len());
        for mut file in std::mem::take(files) {
            if file.url.starts_with("data:") {
                kept.push(file);
                continue;
            }
            match allowed_link(&file.url, hosts)
                .filter(|link| outbound.check(link, "file link").is_ok())
            {
                Some(link) => {
                    file.url = link;
                    kept.push(file);
                }
                None => noted.push(file),
            }
        }
        *files = kept;
        if !noted.is_empty() {
            *content = text_with_notes(content, &noted);
        }
    }
}

/// An `http(s)` link whose host is one of `hosts`, as the URL standard
/// reads it (the way the provider's fetcher will: `\` is `/`, userinfo is
/// dropped), re-serialised, so what is sent is exactly what was checked.
fn allowed_link(url: &str, hosts: &[String]) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return None;
    }
    let host = parsed.host_str()?.to_ascii_lowercase();
    if !hosts.contains(&host) || !parsed.username().is_empty() || parsed.password().is_some() {
        return None;
    }
    Some(parsed.to_string())
}

/// Turns every file of `request` into a text note after its message's text
/// (for a provider that refused the request with its files).
pub fn files_as_notes(request: &mut ModelRequest) {
    for message in &mut request.messages {
        if let ModelMessage::User { content, files } = message {
            if !files.is_empty() {
                *content = text_with_notes(content, &std::mem::take(files));
            }
        }
    }
}

/// The host of an `http(s)` link as the URL standard reads it, lower-cased
/// (without port or user; IPv6 without brackets).
pub fn link_host(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return None;
    }
    let host = match parsed.host()? {
        url::Host::Ipv6(ip) => ip.to_string(),
        other => other.to_string(),
    };
    Some(host.to_ascii_lowercase())
}

/// The OpenAI-compatible `content` array of a user message with files.
pub fn openai_content(text: &str, files: &[ModelFile]) -> Value {
    let mut parts = Vec::with_capacity(files.len() + 1);
    if !text.is_empty() {
        parts.push(json!({"type": "text", "text": text}));
    }
    for file in files {
        let data = file.url.starts_with("data:");
        let linked = file.url.starts_with("https:") || file.url.starts_with("http:");
        let part = if file.media_type.starts_with("image/") && (data || linked) {
            json!({"type": "image_url", "image_url": {"url": file.url}})
        } else if data {
            json!({"type": "file", "file": {"filename": name_of(file), "file_data": file.url}})
        } else {
            json!({"type": "text", "text": note(file)})
        };
        parts.push(part);
    }
    Value::Array(parts)
}

/// The `content` array of a user message with files for a vision model
/// that takes only images (Workers AI's vision chat models): the text, each
/// image as an OpenAI `image_url` part (its `data:` URL or link), a note for
/// any other file.
pub fn vision_content(text: &str, files: &[ModelFile]) -> Value {
    let mut parts = Vec::with_capacity(files.len() + 1);
    let mut notes = text.to_string();
    for file in files {
        let shown = file.url.starts_with("data:")
            || file.url.starts_with("https:")
            || file.url.starts_with("http:");
        if file.media_type.starts_with("image/") && shown {
            parts.push(json!({"type": "image_url", "image_url": {"url": file.url}}));
        } else {
            if !notes.is_empty() {
                notes.push('\n');
            }
            notes.push_str(&note(file));
        }
    }
    if !notes.is_empty() {
        parts.insert(0, json!({"type": "text", "text": notes}));
    }
    Value::Array(parts)
}

/// The text of a user message with files, for a provider given text only:
/// the text, then one note per file.
pub fn text_with_notes(text: &str, files: &[ModelFile]) -> String {
    let mut out = text.to_string();
    for file in files {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&note(file));
    }
    out
}

/// A line naming an attached file: its link when it has one (never the
/// bytes of a `data:` URL).
fn note(file: &ModelFile) -> String {
    match file.url.starts_with("data:") {
        true => format!(
            "[Attached file {} ({}), not shown]",
            name_of(file),
            file.media_type
        ),
        false => format!(
            "[Attached file {} ({}): {}]",
            name_of(file),
            file.media_type,
            file.url
        ),
    }
}

fn name_of(file: &ModelFile) -> &str {
    file.filename
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or("file")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelMessage, ModelRequest};

    const PNG: &str = "data:image/png;base64,iVBORw0KGgo=";
    const PDF: &str = "data:application/pdf;base64,JVBERi0xLjQK";

    fn file(media_type: &str, url: &str, filename: Option<&str>) -> ModelFile {
        ModelFile {
            media_type: media_type.into(),
            url: url.into(),
            filename: filename.map(str::to_string),
        }
    }

    fn request_with(files: Vec<ModelFile>) -> ModelRequest {
        let mut request = ModelRequest::user_text("gpt-4o-mini", "what is in these?");
        request.messages = vec![ModelMessage::User {
            content: "what is in these?".into(),
            files,
        }];
        request
    }

    #[test]
    fn openai_request_body_carries_images_files_and_links_byte_exact() {
        let request = request_with(vec![
            file("image/png", PNG, Some("dot.png")),
            file("image/jpeg", "https://example.com/cat.jpg", None),
            file("application/pdf", PDF, Some("report.pdf")),
            file(
                "application/zip",
                "https://example.com/a.zip",
                Some("a.zip"),
            ),
        ]);
        let body = crate::model::openai::request_body(&request);
        let expected = concat!(
            r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":["#,
            r#"{"type":"text","text":"what is in these?"},"#,
            r#"{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},"#,
            r#"{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}},"#,
            r#"{"type":"file","file":{"filename":"report.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjQK"}},"#,
            r#"{"type":"text","text":"[Attached file a.zip (application/zip): https://example.com/a.zip]"}"#,
            r#"]}],"stream":true,"stream_options":{"include_usage":true}}"#,
        );
        assert_eq!(body, expected);
    }

    #[test]
    fn a_user_message_without_files_keeps_its_plain_string_content() {
        let body = crate::model::openai::request_body(&request_with(Vec::new()));
        assert!(
            body.contains(r#"{"role":"user","content":"what is in these?"}"#),
            "{body}"
        );
    }

    #[test]
    fn a_file_with_no_text_is_sent_alone_and_an_unnamed_file_is_called_file() {
        let content = openai_content(
            "",
            &[file("text/plain", "data:text/plain;base64,aGk=", None)],
        );
        assert_eq!(
            content.to_string(),
            r#"[{"type":"file","file":{"filename":"file","file_data":"data:text/plain;base64,aGk="}}]"#
        );
    }

    #[test]
    fn a_link_to_a_host_not_allowed_becomes_a_note_and_data_files_stay() {
        let mut request = request_with(vec![
            file("image/png", PNG, Some("dot.png")),
            file(
                "image/jpeg",
                "https://evil.example/track.jpg",
                Some("cat.jpg"),
            ),
            file("image/jpeg", "https://cdn.example.com/ok.jpg", None),
        ]);
        keep_allowed_links(
            &mut request,
            &["cdn.example.com".to_string()],
            &OutboundHosts::default(),
        );
        let body = crate::model::openai::request_body(&request);
        assert!(!body.contains(r#""url":"https://evil.example"#), "{body}");
        assert!(
            body.contains("[Attached file cat.jpg (image/jpeg): https://evil.example/track.jpg]")
        );
        assert!(body.contains(
            r#"{"type":"image_url","image_url":{"url":"https://cdn.example.com/ok.jpg"}}"#
        ));
        assert!(body.contains(r#"{"type":"image_url","image_url":{"url":"data:image/png"#));
        let mut none_allowed = request_with(vec![file(
            "image/jpeg",
            "https://cdn.example.com/ok.jpg",
            None,
        )]);
        keep_allowed_links(&mut none_allowed, &[], &OutboundHosts::default());
        assert!(!crate::model::openai::request_body(&none_allowed).contains("image_url"));
    }

    #[test]
    fn a_link_is_read_as_a_fetcher_reads_it_and_sent_as_it_was_checked() {
        let hosts = ["allowed.host".to_string()];
        for sneaky in [
            r"https://attacker\@allowed.host/x.png",
            "https://attacker.example#@allowed.host/x.png",
            "https://user@allowed.host/x.png",
            "javascript://allowed.host/%0aalert(1)",
        ] {
            let mut request = request_with(vec![file("image/png", sneaky, None)]);
            keep_allowed_links(&mut request, &hosts, &OutboundHosts::default());
            let body = crate::model::openai::request_body(&request);
            assert!(!body.contains("image_url"), "{sneaky}: {body}");
        }
        assert_eq!(
            link_host(r"https://attacker\@allowed.host/x").as_deref(),
            Some("attacker")
        );
        let mut plain = request_with(vec![file(
            "image/png",
            "HTTPS://Allowed.Host/a b.png",
            None,
        )]);
        keep_allowed_links(&mut plain, &hosts, &OutboundHosts::default());
        assert!(crate::model::openai::request_body(&plain)
            .contains(r#""url":"https://allowed.host/a%20b.png""#));
    }

    #[test]
    fn a_listed_link_host_the_outbound_policy_refuses_becomes_a_note_unless_allowed() {
        let hosts = [
            "127.0.0.1".to_string(),
            "169.254.169.254".to_string(),
            "localhost".to_string(),
        ];
        for local in [
            "http://127.0.0.1:9/x.png",
            "http://169.254.169.254/latest/x.png",
            "http://localhost/x.png",
        ] {
            let mut request = request_with(vec![file("image/png", local, None)]);
            keep_allowed_links(&mut request, &hosts, &OutboundHosts::default());
            let body = crate::model::openai::request_body(&request);
            assert!(!body.contains("image_url"), "{local}: {body}");
        }
        let mut allowed = request_with(vec![file("image/png", "http://127.0.0.1:9/x.png", None)]);
        keep_allowed_links(&mut allowed, &hosts, &OutboundHosts::from_list("127.0.0.1"));
        assert!(crate::model::openai::request_body(&allowed).contains("image_url"));
    }

    #[test]
    fn the_host_of_a_link_is_read_without_user_or_port() {
        assert_eq!(
            link_host("https://Example.com/x").as_deref(),
            Some("example.com")
        );
        assert_eq!(
            link_host("https://u:p@cdn.example.com:8443/x?y").as_deref(),
            Some("cdn.example.com")
        );
        assert_eq!(link_host("https://[::1]:80/").as_deref(), Some("::1"));
        assert_eq!(link_host("https://"), None);
    }

    #[test]
    fn workers_ai_gets_text_notes_and_never_the_bytes() {
        let request = request_with(vec![
            file("image/png", PNG, Some("dot.png")),
            file("application/zip", "https://example.com/a.zip", None),
        ]);
        let input = crate::model::workers_ai::WorkersAi::input(&request);
        let expected = concat!(
            r#"{"messages":[{"role":"user","content":"what is in these?\n"#,
            r#"[Attached file dot.png (image/png), not shown]\n"#,
            r#"[Attached file file (application/zip): https://example.com/a.zip]"}],"stream":true}"#,
        );
        assert_eq!(input, expected);
        assert!(!input.contains("iVBOR"));
    }

    #[test]
    fn a_workers_ai_vision_model_gets_images_as_image_url_parts() {
        let request = request_with(vec![
            file("image/png", PNG, Some("dot.png")),
            file("application/zip", "https://example.com/a.zip", None),
        ]);
        let provider = crate::model::workers_ai::WorkersAi::new("AI", "call").with_images(true);
        let input: Value = serde_json::from_str(&provider.input_for(&request)).unwrap_or_default();
        let content = &input["messages"][0]["content"];
        assert_eq!(
            content[0],
            json!({"type": "text", "text": "what is in these?\n[Attached file file (application/zip): https://example.com/a.zip]"})
        );
        assert_eq!(
            content[1],
            json!({"type": "image_url", "image_url": {"url": PNG}})
        );
        assert_eq!(content.as_array().map(Vec::len), Some(2));
    }
}

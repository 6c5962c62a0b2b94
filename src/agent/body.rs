//! Reading an HTTP request's body under a limit, for the agent's own routes
//! (`on_request`), the submission API and a worker's entry (and, at the
//! agent's door, any request whose declared body passes the default): a declared
//! `content-length` over the limit is refused before anything is read, and
//! a body without one is read only until it passes the limit, so no request
//! makes the agent hold more than the limit (plus one chunk) of it. JSON
//! bodies are then read through the gate (`protocol::gate::REQUEST_BODY`:
//! their values and nesting counted before anything is built).

/// The limit the crate's own routes read bodies with (the submission API's
/// calls, the demo's routes): 4 MiB, a tab frame's limit.
pub const DEFAULT_BODY_LIMIT: usize = crate::protocol::gate::REQUEST_BODY.max_bytes;

/// Why a body was not read; `status()` is the HTTP answer it deserves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// Over `limit` bytes (declared or read): 413.
    TooLarge { limit: usize },
    /// More JSON values or deeper nesting than the body's budget: 413.
    OverBudget(String),
    /// The body could not be read, or is not UTF-8: 400.
    Unreadable(String),
    /// The body is not the JSON asked for: 400.
    Malformed(String),
    /// The request does not say its body is JSON (`content-type`): 415.
    NotJson,
}

impl BodyError {
    pub fn status(&self) -> u16 {
        match self {
            BodyError::TooLarge { .. } | BodyError::OverBudget(_) => 413,
            BodyError::Unreadable(_) | BodyError::Malformed(_) => 400,
            BodyError::NotJson => 415,
        }
    }
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge { limit } => write!(f, "body too large (limit {limit} bytes)"),
            BodyError::OverBudget(why) => write!(f, "body refused: {why}"),
            BodyError::Unreadable(why) => write!(f, "body could not be read: {why}"),
            BodyError::Malformed(why) => write!(f, "malformed body: {why}"),
            BodyError::NotJson => f.write_str("the body must be sent as application/json"),
        }
    }
}

impl std::error::Error for BodyError {}

/// Whether a declared `content-length` already passes `limit` (a value that
/// is not a number is left to the read, which stops at the limit).
pub fn declared_too_large(content_length: Option<&str>, limit: usize) -> bool {
    content_length
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > limit as u64)
}

/// Whether a `content-type` says JSON (`application/json`, any
/// parameters). A page of another site cannot send that type without the
/// browser asking the server first, unlike a form's or plain text.
pub fn is_json_type(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|t| t.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Appends `chunk` to `body` unless that passes `limit`.
pub fn take_chunk(body: &mut Vec<u8>, chunk: &[u8], limit: usize) -> Result<(), BodyError> {
    if body.len() + chunk.len() > limit {
        return Err(BodyError::TooLarge { limit });
    }
    body.extend_from_slice(chunk);
    Ok(())
}

/// The body of `req` as bytes, at most `limit` of them.
#[cfg(target_arch = "wasm32")]
pub async fn read_bytes(req: &mut worker::Request, limit: usize) -> Result<Vec<u8>, BodyError> {
    use futures::StreamExt;
    let declared = req.headers().get("content-length").ok().flatten();
    if declared_too_large(declared.as_deref(), limit) {
        return Err(BodyError::TooLarge { limit });
    }
    let mut stream = match req.stream() {
        Ok(stream) => stream,
        // No body at all reads as an empty one.
        Err(worker::Error::RustError(_)) => return Ok(Vec::new()),
        Err(e) => return Err(BodyError::Unreadable(e.to_string())),
    };
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyError::Unreadable(e.to_string()))?;
        // Dropping the stream on the way out cancels the rest of the upload.
        take_chunk(&mut body, &chunk, limit)?;
    }
    Ok(body)
}

/// The body of `req` as UTF-8 text, at most `limit` bytes.
#[cfg(target_arch = "wasm32")]
pub async fn read_text(req: &mut worker::Request, limit: usize) -> Result<String, BodyError> {
    let bytes = read_bytes(req, limit).await?;
    String::from_utf8(bytes).map_err(|_| BodyError::Unreadable("not UTF-8".into()))
}

/// The body of `req` parsed as JSON `T`, at most `limit` bytes.
#[cfg(target_arch = "wasm32")]
pub async fn read_json<T: serde::de::DeserializeOwned>(
    req: &mut worker::Request,
    limit: usize,
) -> Result<T, BodyError> {
    let bytes = read_bytes(req, limit).await?;
    json_of(&bytes, limit)
}

/// `bytes` (a body within `limit`) read as JSON `T` through the gate.
pub fn json_of<T: serde::de::DeserializeOwned>(bytes: &[u8], limit: usize) -> Result<T, BodyError> {
    use crate::protocol::gate::{self, GateError, REQUEST_BODY};
    let budget = gate::Budget {
        max_bytes: limit,
        ..REQUEST_BODY
    };
    gate::read_json_bytes(bytes, &budget).map_err(|e| match e {
        GateError::OverBudget(why) => BodyError::OverBudget(why),
        GateError::Invalid(why) => BodyError::Malformed(why),
    })
}

/// As `read_json`, for a route that changes something: refused (415)
/// unless the request says its body is JSON, so that no page of another
/// site can make a browser send it.
#[cfg(target_arch = "wasm32")]
pub async fn read_json_typed<T: serde::de::DeserializeOwned>(
    req: &mut worker::Request,
    limit: usize,
) -> Result<T, BodyError> {
    let content_type = req.headers().get("content-type").ok().flatten();
    if !is_json_type(content_type.as_deref()) {
        return Err(BodyError::NotJson);
    }
    read_json(req, limit).await
}

/// The agent's door: a request whose declared body passes
/// `DEFAULT_BODY_LIMIT` is refused (413) before any route sees it, so no
/// route of the agent, an author's included, is handed a larger one.
#[cfg(target_arch = "wasm32")]
pub fn refuse_declared(req: &worker::Request) -> Option<worker::Result<worker::Response>> {
    let declared = req.headers().get("content-length").ok().flatten();
    declared_too_large(declared.as_deref(), DEFAULT_BODY_LIMIT).then(|| {
        refusal(&BodyError::TooLarge {
            limit: DEFAULT_BODY_LIMIT,
        })
    })
}

/// The answer to a refused body: its status and `{"error": …}`.
#[cfg(target_arch = "wasm32")]
pub fn refusal(error: &BodyError) -> worker::Result<worker::Response> {
    Ok(
        worker::Response::from_json(&serde_json::json!({ "error": error.to_string() }))?
            .with_status(error.status()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_length_over_the_limit_is_refused_before_reading() {
        assert!(declared_too_large(Some("20971520"), 1024));
        assert!(!declared_too_large(Some(" 1024 "), 1024));
        assert!(!declared_too_large(Some("lots"), 1024));
        assert!(!declared_too_large(None, 1024));
    }

    #[test]
    fn reading_stops_at_the_chunk_that_passes_the_limit() {
        let mut body = Vec::new();
        take_chunk(&mut body, &[b'a'; 600], 1000).unwrap();
        take_chunk(&mut body, &[b'b'; 400], 1000).unwrap();
        assert_eq!(body.len(), 1000);
        let refused = take_chunk(&mut body, b"c", 1000).unwrap_err();
        assert_eq!(refused, BodyError::TooLarge { limit: 1000 });
        assert_eq!(refused.status(), 413);
        assert_eq!(body.len(), 1000, "the chunk that passes is not kept");
    }

    #[test]
    fn only_a_json_content_type_is_json() {
        assert!(is_json_type(Some("application/json")));
        assert!(is_json_type(Some("Application/JSON; charset=utf-8")));
        assert!(!is_json_type(Some("text/plain;charset=UTF-8")));
        assert!(!is_json_type(Some("application/x-www-form-urlencoded")));
        assert!(!is_json_type(Some("application/jsonp")));
        assert!(!is_json_type(None));
        assert_eq!(BodyError::NotJson.status(), 415);
    }

    #[test]
    fn a_json_body_of_too_many_values_is_refused_before_it_is_built() {
        let ok: serde_json::Value = json_of(br#"{"a":[1,2]}"#, 1024).unwrap();
        assert_eq!(ok["a"][1], 2);
        let many = format!("[{}0]", "0,".repeat(200_000));
        let refused = json_of::<serde_json::Value>(many.as_bytes(), 1 << 20).unwrap_err();
        assert!(
            refused.to_string().contains("too many JSON values"),
            "{refused}"
        );
        assert_eq!(refused.status(), 413);
    }
}

//! One HTTP exchange with an MCP server through the Workers `fetch` (for a
//! URL the outbound host policy admits): the
//! request the sans-I/O session (or the OAuth flow) built, sent with a deadline (and a tool
//! run's abort signal), its reply read whole up to `MAX_REPLY_BYTES` (then
//! read through the gate by `crate::mcp::jsonrpc`).

use std::time::Duration;

use futures::future::{select, Either};
use futures::StreamExt;
use wasm_bindgen::JsValue;
use worker::{AbortController, Delay, Fetch, Headers, Method, Request, RequestInit, Response};

use crate::agent::tools::context::AbortSignal;
use crate::mcp::jsonrpc::MAX_REPLY_BYTES;
use crate::mcp::{McpError, McpReply, McpRequest};
use crate::outbound::OutboundHosts;

/// Sends `request` unless `hosts` refuses its URL (then nothing is sent);
/// gives up after `timeout_ms` or when `abort` fires.
pub(super) async fn exchange(
    request: &McpRequest,
    hosts: &OutboundHosts,
    timeout_ms: u64,
    abort: Option<AbortSignal>,
) -> Result<McpReply, McpError> {
    hosts
        .check(&request.url, "URL")
        .map_err(McpError::Refused)?;
    let headers = Headers::new();
    for (name, value) in &request.headers {
        headers
            .set(name, value)
            .map_err(|e| McpError::Malformed(format!("header {name}: {e}")))?;
    }
    let mut init = RequestInit::new();
    let method = match request.method {
        "DELETE" => Method::Delete,
        "GET" => Method::Get,
        _ => Method::Post,
    };
    init.with_method(method).with_headers(headers);
    if let Some(body) = &request.body {
        init.with_body(Some(JsValue::from_str(body)));
    }
    let http = Request::new_with_init(&request.url, &init)
        .map_err(|e| McpError::Unreachable(format!("bad request: {e}")))?;
    let controller = AbortController::default();
    let signal = controller.signal();
    let work = Box::pin(async move {
        let response = Fetch::Request(http)
            .send_with_signal(&signal)
            .await
            .map_err(|e| McpError::Unreachable(e.to_string()))?;
        read(response).await
    });
    let deadline = Box::pin(Delay::from(Duration::from_millis(timeout_ms)));
    let given_up = Box::pin(async move {
        match abort {
            Some(signal) => signal.aborted().await,
            None => futures::future::pending::<()>().await,
        }
    });
    let stop = Box::pin(select(deadline, given_up));
    match select(work, stop).await {
        Either::Left((result, _)) => result,
        Either::Right((stopped, _)) => {
            controller.abort();
            match stopped {
                Either::Left(_) => Err(McpError::Timeout(timeout_ms)),
                Either::Right(_) => Err(McpError::Unreachable("the call was given up".into())),
            }
        }
    }
}

/// The reply: status, the two headers the session needs, the body text.
async fn read(mut response: Response) -> Result<McpReply, McpError> {
    let status = response.status_code();
    let header = |name: &str| response.headers().get(name).ok().flatten();
    let content_type = header("content-type");
    let session_id = header("mcp-session-id");
    let www_authenticate = header("www-authenticate");
    // Room for the declared length up front (within the cap): no doubling copies as it grows.
    let declared = header("content-length").and_then(|n| n.trim().parse::<usize>().ok());
    let mut body = Vec::with_capacity(declared.unwrap_or(0).min(MAX_REPLY_BYTES));
    if status != 202 && status != 204 {
        if let Ok(mut stream) = response.stream() {
            while let Some(chunk) = stream.next().await {
                let chunk = chunk
                    .map_err(|e| McpError::Unreachable(format!("the answer broke off: {e}")))?;
                if body.len() + chunk.len() > MAX_REPLY_BYTES {
                    return Err(McpError::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
    Ok(McpReply {
        status,
        content_type,
        session_id,
        www_authenticate,
        // Valid UTF-8 (the usual case) becomes the text without a copy.
        body: String::from_utf8(body)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    })
}

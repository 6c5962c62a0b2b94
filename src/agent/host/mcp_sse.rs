//! The older HTTP+SSE transport as the host runs it: one standing `GET`
//! event stream per server, read by a task of its own that hands each
//! response to the request waiting for its id and notes a changed tool
//! list; each message is POSTed to the stream's endpoint and its answer
//! awaited from the stream. Each message is read through the gate; the
//! stream is closed past its bytes or idle time (`StreamBudget`). The
//! stream closing fails the requests waiting; one that ends by itself
//! tells the host why (`on_end`), which marks the server failed. The
//! protocol pieces are `crate::mcp::legacy_sse`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{select, Either};
use futures::StreamExt;
use serde_json::Value;
use wasm_bindgen_futures::spawn_local;
use worker::{AbortController, ByteStream, Delay, Fetch, Headers, Method, Request, RequestInit};

use crate::agent::host::now_ms;
use crate::agent::tools::context::AbortSignal;
use crate::mcp::jsonrpc::read_message;
use crate::mcp::legacy_sse::{
    endpoint, open_stream, reply_of, response_id, StreamBudget, MAX_STREAM_EVENT_BYTES,
};
use crate::mcp::{McpError, McpReply, McpRequest};
use crate::model::sse::{SseEvent, SseParser};
use crate::outbound::OutboundHosts;

use super::mcp_http::exchange;

/// What learns why a stream ended by itself.
type EndListener = Box<dyn FnOnce(McpError)>;

/// An open event stream to one server.
pub(super) struct SseLink {
    waiting: RefCell<HashMap<u64, oneshot::Sender<Value>>>,
    closed: Cell<bool>,
    tools_changed: Cell<bool>,
    controller: RefCell<Option<AbortController>>,
    /// Why the stream ended by itself (its end, its bytes, its idle time).
    ended: RefCell<Option<McpError>>,
    /// Told why, when the stream ends by itself.
    on_end: RefCell<Option<EndListener>>,
    /// The hosts the stream and its endpoint may be on.
    hosts: OutboundHosts,
}

impl SseLink {
    /// Opens the stream to `url` and waits (at most `timeout_ms`) for its
    /// `endpoint` event; returns the link and the URL to POST to.
    pub(super) async fn open(
        url: &str,
        headers: &[(String, String)],
        hosts: &OutboundHosts,
        timeout_ms: u64,
    ) -> Result<(Rc<SseLink>, String), McpError> {
        hosts
            .check(url, "MCP server URL")
            .map_err(McpError::Refused)?;
        let request = open_stream(url, headers);
        let http_headers = Headers::new();
        for (name, value) in &request.headers {
            http_headers
                .set(name, value)
                .map_err(|e| McpError::Malformed(format!("header {name}: {e}")))?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Get).with_headers(http_headers);
        let http = Request::new_with_init(url, &init)
            .map_err(|e| McpError::Unreachable(format!("bad request: {e}")))?;
        let link = Rc::new(SseLink {
            waiting: RefCell::new(HashMap::new()),
            closed: Cell::new(false),
            tools_changed: Cell::new(false),
            controller: RefCell::new(None),
            ended: RefCell::new(None),
            on_end: RefCell::new(None),
            hosts: hosts.clone(),
        });
        let controller = AbortController::default();
        let signal = controller.signal();
        *link.controller.borrow_mut() = Some(controller);
        let opening = Box::pin(async move {
            let mut response = Fetch::Request(http)
                .send_with_signal(&signal)
                .await
                .map_err(|e| McpError::Unreachable(e.to_string()))?;
            let status = response.status_code();
            let is_stream = response
                .headers()
                .get("content-type")
                .ok()
                .flatten()
                .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
            if !(200..300).contains(&status) || !is_stream {
                return Err(McpError::Http {
                    status,
                    body: "no event stream".into(),
                });
            }
            let mut stream = response
                .stream()
                .map_err(|e| McpError::Unreachable(e.to_string()))?;
            let mut parser = SseParser::with_max_event_bytes(MAX_STREAM_EVENT_BYTES);
            let mut budget = StreamBudget::new(now_ms());
            let mut events: Vec<SseEvent> = Vec::new();
            loop {
                let Some(chunk) = stream.next().await else {
                    return Err(McpError::Unreachable(
                        "the event stream ended before its endpoint".into(),
                    ));
                };
                let chunk =
                    chunk.map_err(|e| McpError::Unreachable(format!("the event stream: {e}")))?;
                budget.on_chunk(chunk.len())?;
                parser.feed(&chunk, &mut events);
                if let Some(at) = events
                    .iter()
                    .position(|e| e.event.as_deref() == Some("endpoint"))
                {
                    let rest: Vec<SseEvent> = events.split_off(at + 1);
                    let data = events.pop().map(|e| e.data).unwrap_or_default();
                    return Ok((data, stream, parser, budget, rest));
                }
                events.clear();
            }
        });
        let deadline = Box::pin(Delay::from(Duration::from_millis(timeout_ms)));
        let (data, stream, parser, budget, rest) = match select(opening, deadline).await {
            Either::Left((opened, _)) => opened?,
            Either::Right(_) => {
                link.close();
                return Err(McpError::Timeout(timeout_ms));
            }
        };
        let post_url = match endpoint(url, &data).and_then(|post_url| {
            hosts
                .check(&post_url, "endpoint the server handed back")
                .map_err(McpError::Refused)?;
            Ok(post_url)
        }) {
            Ok(url) => url,
            Err(e) => {
                link.close();
                return Err(e);
            }
        };
        for event in rest {
            link.on_event(&event);
        }
        let reader = link.clone();
        spawn_local(async move { reader.read(stream, parser, budget).await });
        Ok((link, post_url))
    }

    async fn read(
        self: Rc<Self>,
        mut stream: ByteStream,
        mut parser: SseParser,
        mut budget: StreamBudget,
    ) {
        let mut events = Vec::new();
        let why = loop {
            let left = budget.idle_left_ms(now_ms());
            if left == 0 {
                break StreamBudget::idle_error();
            }
            let idle = Box::pin(Delay::from(Duration::from_millis(left)));
            let chunk = match select(stream.next(), idle).await {
                Either::Left((Some(Ok(chunk)), _)) => chunk,
                Either::Left((Some(Err(e)), _)) => {
                    break McpError::Unreachable(format!("the event stream broke off: {e}"))
                }
                Either::Left((None, _)) => {
                    break McpError::Unreachable("the event stream ended".into())
                }
                Either::Right(_) => continue,
            };
            if let Err(over) = budget.on_chunk(chunk.len()) {
                break over;
            }
            parser.feed(&chunk, &mut events);
            for event in events.drain(..) {
                budget.on_event(now_ms());
                self.on_event(&event);
            }
        };
        self.end(why);
    }

    /// The stream ended by itself: closed, and the host told why (unless
    /// the host closed it first).
    fn end(&self, why: McpError) {
        if self.closed.get() {
            return;
        }
        *self.ended.borrow_mut() = Some(why.clone());
        self.close();
        let tell = self.on_end.borrow_mut().take();
        if let Some(tell) = tell {
            tell(why);
        }
    }

    /// `tell` learns why the stream ends, if it ends by itself.
    pub(super) fn on_end(&self, tell: impl FnOnce(McpError) + 'static) {
        *self.on_end.borrow_mut() = Some(Box::new(tell));
    }

    fn on_event(&self, event: &SseEvent) {
        if !matches!(event.event.as_deref(), None | Some("message")) {
            return;
        }
        // A message over its budget is dropped unbuilt; a request waiting
        // for it runs into its deadline.
        let Ok(message) = read_message(&event.data) else {
            return;
        };
        if message.get("method").and_then(Value::as_str) == Some("notifications/tools/list_changed")
        {
            self.tools_changed.set(true);
        }
        if let Some(id) = response_id(&message) {
            if let Some(waiter) = self.waiting.borrow_mut().remove(&id) {
                let _ = waiter.send(message);
            }
        }
    }

    /// Ends the stream; requests still waiting fail.
    pub(super) fn close(&self) {
        self.closed.set(true);
        if let Some(controller) = self.controller.borrow_mut().take() {
            controller.abort();
        }
        self.waiting.borrow_mut().clear();
    }

    /// Takes the note that the server said its tool list changed.
    pub(super) fn take_tools_changed(&self) -> bool {
        self.tools_changed.replace(false)
    }

    /// POSTs `request` and waits (at most `timeout_ms`, or until `abort`)
    /// for its response on the stream.
    pub(super) async fn send(
        &self,
        request: &McpRequest,
        timeout_ms: u64,
        abort: Option<AbortSignal>,
    ) -> Result<McpReply, McpError> {
        if self.closed.get() {
            return Err(self
                .ended
                .borrow()
                .clone()
                .unwrap_or_else(|| McpError::Unreachable("the event stream closed".into())));
        }
        let Some(id) = request.id else {
            return exchange(request, &self.hosts, timeout_ms, abort).await;
        };
        let (tx, rx) = oneshot::channel();
        self.waiting.borrow_mut().insert(id, tx);
        let started = crate::agent::host::now_ms();
        let posted = exchange(request, &self.hosts, timeout_ms, abort.clone()).await;
        let posted = match posted {
            Ok(reply) if (200..300).contains(&reply.status) => reply,
            other => {
                self.waiting.borrow_mut().remove(&id);
                return other;
            }
        };
        drop(posted);
        let left = timeout_ms.saturating_sub(crate::agent::host::now_ms().saturating_sub(started));
        let deadline = Box::pin(Delay::from(Duration::from_millis(left)));
        let given_up = Box::pin(async move {
            match abort {
                Some(signal) => signal.aborted().await,
                None => futures::future::pending::<()>().await,
            }
        });
        let outcome = match select(rx, select(deadline, given_up)).await {
            Either::Left((Ok(message), _)) => Ok(reply_of(&message)),
            Either::Left((Err(_), _)) => Err(self
                .ended
                .borrow()
                .clone()
                .unwrap_or_else(|| McpError::Unreachable("the event stream closed".into()))),
            Either::Right((Either::Left(_), _)) => Err(McpError::Timeout(timeout_ms)),
            Either::Right((Either::Right(_), _)) => {
                Err(McpError::Unreachable("the call was given up".into()))
            }
        };
        self.waiting.borrow_mut().remove(&id);
        outcome
    }
}

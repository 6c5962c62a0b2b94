//! The host's side of a model call: the provider's plan carried out (an HTTP
//! request or a binding), its streamed body decoded and fed to the core as
//! events (or, for a call outside a turn, its text collected), and the body
//! read to its end once the model is done.

use std::rc::Rc;
use std::time::Duration;

use futures::StreamExt;
use worker::{
    AbortController, AbortSignal, ByteStream, Delay, Fetch, Headers, Method, Request, RequestInit,
};

use crate::core::{CallId, Event};
use crate::model::{CallPlan, HttpRequest, ModelFailure, ModelProvider, ModelRequest};

use super::AgentHost;

impl AgentHost {
    /// Runs model call `call` to its end; a failure reaches the core as
    /// `Event::ModelFailed`.
    pub(super) async fn run_model(self: Rc<Self>, call: CallId, request: ModelRequest) {
        let provider = match self.providers.for_request(&request) {
            Ok(provider) => provider,
            Err(failure) => {
                self.dispatch(Event::ModelFailed { call, failure });
                return;
            }
        };
        let controller = AbortController::default();
        let signal = controller.signal();
        self.model_calls.borrow_mut().insert(call, controller);
        let host = self.clone();
        let mut to_core = move |event| host.dispatch(Event::Model { call, event });
        let result = self
            .stream_model(provider, request, &signal, &mut to_core)
            .await;
        self.model_calls.borrow_mut().remove(&call);
        if let Err(failure) = result {
            let failure = self.for_tabs(failure);
            self.dispatch(Event::ModelFailed { call, failure });
        }
    }

    /// The provider's own words go to the log; the tabs, the stored error
    /// record and the hooks get the status class, unless the worker's var
    /// `MODEL_ERROR_DETAIL=tabs` shows the full text (while developing).
    fn for_tabs(&self, failure: ModelFailure) -> ModelFailure {
        const MAX_LOGGED_CHARS: usize = 1000;
        let detail: String = failure.text.chars().take(MAX_LOGGED_CHARS).collect();
        self.log_line(
            crate::log::LogLevel::Warn,
            &format!("model call failed: {detail:?}"),
        );
        match self.model_error_detail_to_tabs {
            true => failure,
            false => ModelFailure {
                text: failure.status_class(),
                ..failure
            },
        }
    }

    /// A model call outside a turn (`AgentHandle::generate_text`): the
    /// agent's provider asked `request`, its text collected.
    pub(super) async fn generate_text(
        self: Rc<Self>,
        request: ModelRequest,
    ) -> Result<String, ModelFailure> {
        let provider = self.providers.for_request(&request)?;
        let signal = AbortController::default().signal();
        let mut text = String::new();
        let mut collect = |event| {
            if let crate::model::ModelEvent::TextDelta(delta) = event {
                text.push_str(&delta);
            }
        };
        self.stream_model(provider, request, &signal, &mut collect)
            .await?;
        Ok(text)
    }

    /// Carries out the provider's plan for `request` and hands the decoded
    /// events to `sink` as they arrive. The request is turned into its
    /// plan (the HTTP body) and dropped before anything is awaited, so a long
    /// context is not held in memory for the length of the call.
    async fn stream_model(
        self: &Rc<Self>,
        provider: &dyn ModelProvider,
        mut request: ModelRequest,
        signal: &AbortSignal,
        sink: &mut dyn FnMut(crate::model::ModelEvent),
    ) -> Result<(), ModelFailure> {
        crate::model::files::keep_allowed_links(&mut request, &self.link_hosts, self.mcp.hosts());
        let plan = provider.plan(&request);
        drop(request);
        let mut body = match plan {
            CallPlan::Http(http) => fetch_body(provider, http, signal).await?,
            CallPlan::Binding(binding) => {
                crate::agent::binding_model::run_binding(&self.env, &binding).await?
            }
            CallPlan::Local(reply) => {
                let mut events = reply.events;
                deliver(sink, &mut events);
                return reply.end;
            }
        };
        let mut decoder = provider.decoder();
        let mut events = Vec::new();
        while let Some(chunk) = body.next().await {
            let bytes =
                chunk.map_err(|e| ModelFailure::cut_off(format!("Model stream failed: {e}")))?;
            // Events decoded before a failure in the same read (text, then an error event)
            // reach the core first, so the text streamed before the failure is kept.
            let decoded = decoder.decode(&bytes, &mut events);
            deliver(sink, &mut events);
            if let Err(failure) = decoded {
                // The failure reaches the core now; the rest is read aside.
                wasm_bindgen_futures::spawn_local(drain(body));
                return Err(failure);
            }
            if decoder.is_finished() {
                drain(body).await;
                return Ok(());
            }
        }
        let ended = decoder.end(&mut events);
        deliver(sink, &mut events);
        ended
    }
}

fn deliver(
    sink: &mut dyn FnMut(crate::model::ModelEvent),
    events: &mut Vec<crate::model::ModelEvent>,
) {
    for event in events.drain(..) {
        sink(event);
    }
}

/// How long a finished model stream may take to close before it is dropped.
const DRAIN_MS: u64 = 5_000;

/// Reads what is left of a model stream whose last event has arrived or
/// that failed to decode (usually nothing: the provider closes it right
/// after), so that the stream
/// ends by itself. A stream dropped before its end is cancelled, and the
/// stream adapter keeps a callback for that cancel in the JS heap for good:
/// one per model call, which a long-lived agent would pile up. A stream
/// still open after `DRAIN_MS` is dropped anyway.
async fn drain(mut body: ByteStream) {
    let rest = Box::pin(async move { while body.next().await.is_some() {} });
    let limit = Delay::from(Duration::from_millis(DRAIN_MS));
    futures::future::select(rest, limit).await;
}

/// POSTs `http`: the body stream of a 2xx answer, or the provider's reading
/// of any other.
async fn fetch_body(
    provider: &dyn ModelProvider,
    http: HttpRequest,
    signal: &AbortSignal,
) -> Result<ByteStream, ModelFailure> {
    let headers = Headers::new();
    for (name, value) in &http.headers {
        let _ = headers.set(name, value);
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(wasm_bindgen::JsValue::from_str(&http.body)));
    let request = Request::new_with_init(&http.url, &init)
        .map_err(|e| ModelFailure::permanent(format!("Model request could not be built: {e}")))?;
    // The body is in JS now; its copy here is not held while the call runs.
    drop(init);
    drop(http);
    let mut response = Fetch::Request(request)
        .send_with_signal(signal)
        .await
        .map_err(|e| ModelFailure::transient(format!("Model request failed: {e}")))?;
    let status = response.status_code();
    if !(200..300).contains(&status) {
        let headers = response.headers().clone();
        let text = match response.stream() {
            Ok(body) => error_body(body).await,
            Err(_) => String::new(),
        };
        let header = |name: &str| headers.get(name).ok().flatten();
        return Err(provider.http_failure(status, &text, &header));
    }
    response
        .stream()
        .map_err(|e| ModelFailure::transient(format!("Model response has no body: {e}")))
}

/// The start of a provider's error body, at most `gate::MODEL_ERROR_BODY`
/// bytes of it (what the error text needs); the rest is read aside and
/// dropped, so a huge or endless body costs no more than that.
async fn error_body(mut body: ByteStream) -> String {
    let limit = crate::protocol::gate::MODEL_ERROR_BODY.max_bytes;
    let mut text = Vec::new();
    while let Some(Ok(chunk)) = body.next().await {
        let room = limit - text.len();
        text.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if text.len() == limit {
            wasm_bindgen_futures::spawn_local(drain(body));
            break;
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}

//! The host's side of a model call: the provider's plan carried out (an HTTP
//! request or a binding), its streamed body decoded and fed to the core as
//! events (or, for a call outside a turn, its text collected) as each chunk
//! arrives (`body_pump.rs`), the rest read aside once the model is done.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen_futures::JsFuture;
use worker::web_sys::ReadableStream;
use worker::{AbortController, AbortSignal, Response, ResponseBody};

use crate::core::{CallId, Effect, Event};
use crate::model::{
    CallPlan, HttpRequest, ModelFailure, ModelProvider, ModelRequest, ResponseDecoder,
};

use super::body_pump::{self, PumpEnd};
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
        let mut answered = false;
        let to_core = move |events: &mut Vec<_>| {
            host.dispatch_model_events(call, events.drain(..));
            if !answered {
                answered = true;
                host.set_alarm_now();
            }
        };
        let result = self.stream_model(provider, request, &signal, to_core).await;
        self.model_calls.borrow_mut().remove(&call);
        if let Err(failure) = result {
            let failure = self.for_tabs(failure);
            self.dispatch(Event::ModelFailed { call, failure });
        }
    }

    /// The events one read of a model's body decoded, handed to the core
    /// in one run with one reading of the clock: the frames they send are
    /// carried out together, in order, at the end; any other effect (a
    /// write, a tool run, the turn's end) is carried out before the next
    /// event is handled, as a dispatch of each would.
    fn dispatch_model_events(
        self: &Rc<Self>,
        call: CallId,
        events: impl Iterator<Item = crate::model::ModelEvent>,
    ) {
        let now = super::now_ms();
        let mut frames = Vec::new();
        for event in events {
            let effects = self.handle_event(Event::Model { call, event }, now);
            let only_frames = effects
                .iter()
                .all(|e| matches!(e, Effect::Send { .. } | Effect::SendTranscript { .. }));
            frames.extend(effects);
            if !only_frames {
                self.execute(std::mem::take(&mut frames));
            }
        }
        if !frames.is_empty() {
            self.execute(frames);
        }
        self.schedule_timers();
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
        let text = Rc::new(RefCell::new(String::new()));
        let collected = text.clone();
        let collect = move |events: &mut Vec<_>| {
            for event in events.drain(..) {
                if let crate::model::ModelEvent::TextDelta(delta) = event {
                    collected.borrow_mut().push_str(&delta);
                }
            }
        };
        self.stream_model(provider, request, &signal, collect)
            .await?;
        let text = text.take();
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
        mut sink: impl FnMut(&mut Vec<crate::model::ModelEvent>) + 'static,
    ) -> Result<(), ModelFailure> {
        crate::model::files::keep_allowed_links(&mut request, &self.link_hosts, self.mcp.hosts());
        let plan = provider.plan(&request);
        drop(request);
        let body = match plan {
            CallPlan::Http(http) => fetch_body(provider, http, signal).await?,
            CallPlan::Binding(binding) => {
                crate::agent::binding_model::run_binding(&self.env, &binding).await?
            }
            CallPlan::Local(reply) => {
                let mut events = reply.events;
                sink(&mut events);
                return reply.end;
            }
        };
        let reading = Rc::new(RefCell::new(Reading {
            decoder: provider.decoder(),
            sink: Box::new(sink),
            events: Vec::new(),
            failure: None,
        }));
        let fed = reading.clone();
        let pumped = body_pump::pump(&body, move |bytes| fed.borrow_mut().feed(bytes))
            .await
            .map_err(|e| ModelFailure::cut_off(format!("Model stream failed: {e}")))?;
        let mut reading = reading.borrow_mut();
        match (reading.failure.take(), pumped) {
            (Some(failure), _) => Err(failure),
            (None, PumpEnd::Stopped) => Ok(()),
            (None, PumpEnd::Ended) => reading.end(),
        }
    }
}

/// Takes the events decoded so far (all of them).
type EventSink = dyn FnMut(&mut Vec<crate::model::ModelEvent>);

/// A model body being decoded: the provider's decoder, and a failure it
/// reported (the reading stops there).
struct Reading {
    decoder: Box<dyn ResponseDecoder>,
    sink: Box<EventSink>,
    events: Vec<crate::model::ModelEvent>,
    failure: Option<ModelFailure>,
}

impl Reading {
    /// Decodes one chunk and hands its events to `sink`, the deltas that
    /// arrived together joined (`model::join_deltas`); whether more of the
    /// body is wanted.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        // Events decoded before a failure in the same read (text, then an
        // error event) reach the core first, so the text streamed before the
        // failure is kept.
        let decoded = self.decoder.decode(bytes, &mut self.events);
        crate::model::join_deltas(&mut self.events);
        (self.sink)(&mut self.events);
        if let Err(failure) = decoded {
            self.failure = Some(failure);
            return false;
        }
        !self.decoder.is_finished()
    }

    /// The body ended: what the decoder still holds, and whether the reply
    /// was whole.
    fn end(&mut self) -> Result<(), ModelFailure> {
        let ended = self.decoder.end(&mut self.events);
        crate::model::join_deltas(&mut self.events);
        (self.sink)(&mut self.events);
        ended
    }
}

/// POSTs `http`: the body stream of a 2xx answer, or the provider's reading
/// of any other.
async fn fetch_body(
    provider: &dyn ModelProvider,
    http: HttpRequest,
    signal: &AbortSignal,
) -> Result<ReadableStream, ModelFailure> {
    let (names, values): (Vec<String>, Vec<String>) = http.headers.into_iter().unzip();
    let posted = post(&http.url, names, values, &http.body, signal).map_err(|e| {
        ModelFailure::permanent(format!(
            "Model request could not be built: {}",
            js_error_text(&e)
        ))
    });
    // The body is in JS now; its copy here is not held while the call runs.
    drop(http.body);
    let response: Response = JsFuture::from(posted?)
        .await
        .map(|r| worker::worker_sys::web_sys::Response::from(r).into())
        .map_err(|e| {
            ModelFailure::transient(format!("Model request failed: {}", js_error_text(&e)))
        })?;
    let status = response.status_code();
    if !(200..300).contains(&status) {
        let headers = response.headers().clone();
        let text = match body_of(&response) {
            Some(body) => error_body(&body).await,
            None => String::new(),
        };
        let header = |name: &str| headers.get(name).ok().flatten();
        return Err(provider.http_failure(status, &text, &header));
    }
    body_of(&response).ok_or_else(|| ModelFailure::transient("Model response has no body"))
}

#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
export function post(url, names, values, body, signal) {
  const headers = new Headers();
  for (let i = 0; i < names.length; i++) headers.set(names[i], values[i]);
  return fetch(url, { method: 'POST', headers, body, signal });
}
"#)]
extern "C" {
    /// `fetch(url, { method: 'POST', headers, body, signal })` built on the
    /// JS side in one call (the request's parts crossing once).
    #[wasm_bindgen(catch)]
    fn post(
        url: &str,
        names: Vec<String>,
        values: Vec<String>,
        body: &str,
        signal: &worker::worker_sys::web_sys::AbortSignal,
    ) -> Result<js_sys::Promise, wasm_bindgen::JsValue>;
}

/// What a thrown JS value says: an `Error` as `Name: message`, else its text.
fn js_error_text(error: &wasm_bindgen::JsValue) -> String {
    use wasm_bindgen::JsCast;
    match error.dyn_ref::<js_sys::Error>() {
        Some(e) => String::from(e.to_string()),
        None => error.as_string().unwrap_or_else(|| format!("{error:?}")),
    }
}

/// The streamed body of a fetch's response, if it has one.
fn body_of(response: &Response) -> Option<ReadableStream> {
    match response.body() {
        ResponseBody::Stream(body) => Some(body.clone()),
        _ => None,
    }
}

/// The start of a provider's error body, at most `gate::MODEL_ERROR_BODY`
/// bytes of it (what the error text needs); the rest is read aside and
/// dropped, so a huge or endless body costs no more than that.
async fn error_body(body: &ReadableStream) -> String {
    let limit = crate::protocol::gate::MODEL_ERROR_BODY.max_bytes;
    let text = Rc::new(RefCell::new(Vec::new()));
    let kept = text.clone();
    // A body that fails while read leaves the text read before the failure.
    let _ = body_pump::pump(body, move |chunk| {
        let mut text = kept.borrow_mut();
        let room = limit - text.len();
        text.extend_from_slice(&chunk[..chunk.len().min(room)]);
        text.len() < limit
    })
    .await;
    let text = text.take();
    String::from_utf8_lossy(&text).into_owned()
}

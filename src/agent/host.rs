//! Runs a core inside a Durable Object: feeds it platform events (sockets,
//! model stream, tool results, timers) and carries out its effects. Makes no
//! protocol decisions of its own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use futures::future::{AbortHandle, Abortable};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use wasm_bindgen_futures::spawn_local;
use worker::{
    AbortController, Delay, Env, Fetch, Headers, Method, Request, RequestInit, Response, State,
    WebSocket, WebSocketIncomingMessage, WebSocketPair,
};

use crate::core::{CallId, ConnId, Core, Effect, Event, Timer};
use crate::model::openai::{self, StreamDecoder};
use crate::model::ModelFailure;
use crate::protocol::channel::rpc_tool_call;
use crate::protocol::server;
use crate::store::SqlStore;

use super::access::{Refusal, RequestInfo};
use super::definition::{core_config, AgentDefinition, AgentSettings, ServerTool, Vars};
use super::ids::RandomIds;

/// Per-socket metadata kept in the WebSocket attachment (survives hibernation).
#[derive(Debug, Serialize, Deserialize)]
struct Attachment {
    conn: String,
    /// A parent agent's `chat()` channel rather than a browser tab.
    #[serde(default)]
    channel: bool,
}

type Authorizer = Box<dyn Fn(&RequestInfo) -> Result<(), Refusal>>;

pub struct AgentHost {
    state: State,
    authorize: Authorizer,
    store: SqlStore,
    core: RefCell<Core>,
    settings: AgentSettings,
    tools: HashMap<String, ServerTool>,
    sockets: RefCell<HashMap<ConnId, WebSocket>>,
    model_calls: RefCell<HashMap<CallId, AbortController>>,
    /// The pending in-isolate timer of each kind. Re-arming or clearing one
    /// aborts the previous wait, which drops its `Delay` (clearTimeout) and its
    /// closure, so superseded timers (e.g. a 120 s stall check per turn) do
    /// not pile up until they expire.
    timers: RefCell<HashMap<Timer, AbortHandle>>,
    /// `DEBUG_MEMORY=1`: serve `GET …/__debug/memory` (see `debug_memory`).
    debug_memory: bool,
}

/// Agents constructed by this wasm instance (for `…/__debug/memory`).
static HOSTS_CREATED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

impl AgentHost {
    pub fn new<D: AgentDefinition>(
        state: State,
        env: Env,
        definition: D,
        agent: &str,
    ) -> worker::Result<Rc<Self>> {
        let definition = Rc::new(definition);
        let lookup = |name: &str| {
            env.var(name)
                .map(|v| v.to_string())
                .or_else(|_| env.secret(name).map(|v| v.to_string()))
                .ok()
        };
        let debug_memory = lookup("DEBUG_MEMORY").as_deref() == Some("1");
        let settings = definition.settings(&Vars(&lookup));
        let tools = definition.tools();
        let store = SqlStore::open(state.storage().sql())?;
        let stored = store.load()?;
        let name = stored_name(&store);
        let config = core_config(&definition, &settings, &tools, &name, agent);
        let core = Core::new(config, stored, Box::new(RandomIds), now_ms());
        let (owner, allowed) = (definition.clone(), settings.clone());
        let authorize: Authorizer = Box::new(move |request| owner.authorize(request, &allowed));
        let host = Rc::new(AgentHost {
            state,
            authorize,
            store,
            core: RefCell::new(core),
            settings,
            tools: tools
                .into_iter()
                .map(|t| (t.spec.name.clone(), t))
                .collect(),
            sockets: RefCell::new(HashMap::new()),
            model_calls: RefCell::new(HashMap::new()),
            timers: RefCell::new(HashMap::new()),
            debug_memory,
        });
        HOSTS_CREATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        host.adopt_open_sockets();
        host.dispatch(Event::Woke);
        Ok(host)
    }

    /// Sockets accepted by an earlier instance (before hibernation or eviction).
    fn adopt_open_sockets(self: &Rc<Self>) {
        for ws in self.state.get_websockets() {
            if let Ok(Some(Attachment { conn, .. })) = ws.deserialize_attachment::<Attachment>() {
                let conn: ConnId = Rc::from(conn);
                self.sockets.borrow_mut().insert(conn.clone(), ws);
                self.dispatch(Event::Adopted { conn });
            }
        }
    }

    pub async fn fetch(self: &Rc<Self>, req: Request) -> worker::Result<Response> {
        let url = req.url()?;
        let path = url.path();
        if let Some(name) = crate::routing::instance_name(path) {
            self.remember_name(&name);
        }
        let channel = crate::routing::is_channel_path(path);
        if !channel {
            if let Err(refusal) = (self.authorize)(&request_info(&req)?) {
                return Response::error(refusal.reason, refusal.status);
            }
        }
        if self.debug_memory && path.ends_with("/__debug/memory") {
            return Response::from_json(&self.debug_memory());
        }
        if path.ends_with("/get-messages") {
            let messages = self.core.borrow().messages();
            return Response::from_json(&messages);
        }
        let upgrade = req.headers().get("Upgrade")?.unwrap_or_default();
        if !upgrade.eq_ignore_ascii_case("websocket") {
            return Response::error("Not implemented", 404);
        }
        let pk = url
            .query_pairs()
            .find(|(k, _)| k == "_pk")
            .map(|(_, v)| v.into_owned())
            .filter(|v| !v.is_empty() && v.len() <= 128);
        let conn = match channel {
            true => self.unique_conn_id(Some(format!("channel:{}", super::ids::random_token(12)))),
            false => self.unique_conn_id(pk),
        };
        let pair = WebSocketPair::new()?;
        self.state.accept_web_socket(&pair.server);
        pair.server.serialize_attachment(Attachment {
            conn: conn.to_string(),
            channel,
        })?;
        self.sockets.borrow_mut().insert(conn.clone(), pair.server);
        self.dispatch(if channel {
            Event::Adopted { conn }
        } else {
            Event::Connected { conn }
        });
        Response::from_websocket(pair.client)
    }

    /// Debug-only (`DEBUG_MEMORY=1`) figures for memory investigations: the
    /// size of this wasm instance's linear memory and how many agents it has
    /// constructed (one shared instance ⇒ the count grows across agents).
    fn debug_memory(&self) -> serde_json::Value {
        use wasm_bindgen::JsCast;
        let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
        let bytes = memory
            .buffer()
            .unchecked_into::<js_sys::ArrayBuffer>()
            .byte_length();
        let core = self.core.borrow();
        serde_json::json!({
            "wasmMemoryBytes": bytes,
            "hostsCreated": HOSTS_CREATED.load(std::sync::atomic::Ordering::Relaxed),
            "messages": core.messages().len(),
            "sockets": self.sockets.borrow().len(),
            "pendingTimers": self.timers.borrow().len(),
            "sqliteDatabaseBytes": self.store.database_size(),
        })
    }

    /// The client picks `_pk`; two sockets with the same one stay distinct.
    fn unique_conn_id(&self, pk: Option<String>) -> ConnId {
        let base = pk.unwrap_or_else(|| super::ids::random_token(16));
        let sockets = self.sockets.borrow();
        let mut candidate = base.clone();
        let mut n = 1;
        while sockets.contains_key(candidate.as_str()) {
            n += 1;
            candidate = format!("{base}#{n}");
        }
        Rc::from(candidate)
    }

    fn remember_name(&self, name: &str) {
        let mut core = self.core.borrow_mut();
        if core.config().name != name {
            core.set_name(name);
            let _ = self.store.apply(&crate::core::StoreOp::PutConfig {
                key: crate::core::ConfigKey::InstanceName,
                value: name.to_string(),
            });
        }
    }

    /// The agent's own turn (e.g. from a scheduled job or an HTTP route of
    /// yours): stored, queued and broadcast to every tab like a tab's turn.
    pub fn chat(self: &Rc<Self>, message: crate::protocol::UIMessage) {
        self.dispatch(Event::ProgrammaticChat {
            conn: None,
            message,
            tools: Vec::new(),
            executor: false,
        });
    }

    /// Forgets the history; every tab is told to clear.
    pub fn clear_messages(self: &Rc<Self>) {
        self.dispatch(Event::ClearHistory);
    }

    pub fn on_message(self: &Rc<Self>, ws: WebSocket, message: WebSocketIncomingMessage) {
        let Some((conn, channel)) = self.conn_of(&ws) else {
            return;
        };
        match message {
            WebSocketIncomingMessage::String(text) if channel => {
                self.dispatch(Event::ChannelFrame { conn, text })
            }
            WebSocketIncomingMessage::String(text) => self.dispatch(Event::Frame { conn, text }),
            WebSocketIncomingMessage::Binary(_) => {
                let _ = ws.send_with_str(server::chat_error(
                    "binary frames are not supported; send JSON text",
                ));
            }
        }
    }

    pub fn on_close(self: &Rc<Self>, ws: WebSocket) {
        // Complete the client's close handshake (the runtime does not answer a
        // hibernatable socket's close frame by itself); fails harmlessly on a
        // socket that is already gone.
        let _ = ws.close(Some(1000), None::<&str>);
        if let Some((conn, _)) = self.conn_of(&ws) {
            self.sockets.borrow_mut().remove(&conn);
            self.dispatch(Event::Disconnected { conn });
        }
    }

    fn conn_of(&self, ws: &WebSocket) -> Option<(ConnId, bool)> {
        let attachment = ws.deserialize_attachment::<Attachment>().ok()??;
        let conn: ConnId = Rc::from(attachment.conn);
        if !self.sockets.borrow().contains_key(&conn) {
            self.sockets.borrow_mut().insert(conn.clone(), ws.clone());
        }
        Some((conn, attachment.channel))
    }

    pub fn dispatch(self: &Rc<Self>, event: Event) {
        let effects = {
            let mut core = self.core.borrow_mut();
            core.handle(event, now_ms());
            core.take_effects()
        };
        self.execute(effects);
    }

    fn execute(self: &Rc<Self>, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Send { to, frame } => self.send_frame(&to, &frame),
                Effect::Store(op) => {
                    if let Err(e) = self.store.apply(&op) {
                        worker::console_error!("storage write failed: {e}");
                    }
                }
                Effect::CallModel { call, body } => {
                    let host = self.clone();
                    spawn_local(async move { host.run_model(call, body).await });
                }
                Effect::AbortModel { call } => {
                    if let Some(controller) = self.model_calls.borrow_mut().remove(&call) {
                        controller.abort();
                    }
                }
                Effect::RunTool {
                    call,
                    tool_call_id,
                    tool_name,
                    input,
                } => {
                    let host = self.clone();
                    let tool = self.tools.get(&tool_name).cloned();
                    spawn_local(async move {
                        let result = match tool {
                            Some(tool) => tool.call(input).await,
                            None => Err(format!("Tool '{tool_name}' is not available.")),
                        };
                        host.dispatch(Event::ToolDone {
                            call,
                            tool_call_id,
                            result,
                        });
                    });
                }
                Effect::CallRemoteTool {
                    call,
                    conn,
                    tool_call_id,
                    tool_name,
                    input,
                } => {
                    let frame = rpc_tool_call(call, &tool_call_id, &tool_name, &input);
                    if let Some(ws) = self.sockets.borrow().get(&conn) {
                        let _ = ws.send_with_str(&frame);
                    }
                }
                Effect::SetTimer { timer, at_ms } if timer.is_durable() => self.set_alarm(at_ms),
                Effect::SetTimer { timer, at_ms } => self.set_timer(timer, at_ms),
                Effect::ClearTimer { timer } if timer.is_durable() => self.clear_alarm(),
                Effect::ClearTimer { timer } => {
                    if let Some(pending) = self.timers.borrow_mut().remove(&timer) {
                        pending.abort();
                    }
                }
            }
        }
    }

    /// Sends one frame to each listed socket. The text crosses into JS once:
    /// every socket gets the same JS string (a broadcast to N tabs would
    /// otherwise decode the UTF-8 N times).
    fn send_frame(&self, to: &[ConnId], frame: &str) {
        let sockets = self.sockets.borrow();
        if let [conn] = to {
            if let Some(ws) = sockets.get(conn) {
                let _ = ws.send_with_str(frame);
            }
            return;
        }
        let text = wasm_bindgen::JsValue::from_str(frame);
        for conn in to {
            if let Some(ws) = sockets.get(conn) {
                let _ = send_js_string(ws.as_ref(), &text);
            }
        }
    }

    /// The durable alarm outlives the isolate: a cut turn is woken by it.
    fn set_alarm(&self, at_ms: u64) {
        let storage = self.state.storage();
        let offset = at_ms.saturating_sub(now_ms()).max(1) as i64;
        spawn_local(async move {
            if let Err(e) = storage.set_alarm(offset).await {
                worker::console_error!("could not set the alarm: {e}");
            }
        });
    }

    fn clear_alarm(&self) {
        let storage = self.state.storage();
        spawn_local(async move {
            let _ = storage.delete_alarm().await;
        });
    }

    pub fn on_alarm(self: &Rc<Self>) {
        self.dispatch(Event::Timer(Timer::Heartbeat));
    }

    fn set_timer(self: &Rc<Self>, timer: Timer, at_ms: u64) {
        let wait = at_ms.saturating_sub(now_ms());
        let (handle, registration) = AbortHandle::new_pair();
        if let Some(previous) = self.timers.borrow_mut().insert(timer, handle) {
            previous.abort();
        }
        let delay = Abortable::new(Delay::from(Duration::from_millis(wait)), registration);
        let host = Rc::downgrade(self);
        spawn_local(async move {
            // A re-arm or clear aborts this wait (checked before the wake-up
            // is seen), so an `Ok` means this is still the current timer.
            if delay.await.is_err() {
                return;
            }
            if let Some(host) = host.upgrade() {
                host.timers.borrow_mut().remove(&timer);
                host.dispatch(Event::Timer(timer));
            }
        });
    }

    async fn run_model(self: Rc<Self>, call: CallId, body: String) {
        let Some(base_url) = self.settings.base_url.clone() else {
            let failure = ModelFailure::permanent(
                "No model is configured: set OPENAI_BASE_URL (and OPENAI_API_KEY).",
            );
            self.dispatch(Event::ModelFailed { call, failure });
            return;
        };
        let controller = AbortController::default();
        let signal = controller.signal();
        self.model_calls.borrow_mut().insert(call, controller);
        let result = self.stream_model(call, &base_url, body, &signal).await;
        self.model_calls.borrow_mut().remove(&call);
        if let Err(failure) = result {
            self.dispatch(Event::ModelFailed { call, failure });
        }
    }

    async fn stream_model(
        self: &Rc<Self>,
        call: CallId,
        base_url: &str,
        body: String,
        signal: &worker::AbortSignal,
    ) -> Result<(), ModelFailure> {
        let headers = Headers::new();
        let _ = headers.set("content-type", "application/json");
        let _ = headers.set("accept", "text/event-stream");
        if let Some(key) = &self.settings.api_key {
            let _ = headers.set("authorization", &format!("Bearer {key}"));
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_body(Some(wasm_bindgen::JsValue::from_str(&body)));
        let url = openai::chat_completions_url(base_url);
        let request = Request::new_with_init(&url, &init).map_err(|e| {
            ModelFailure::permanent(format!("Model request could not be built: {e}"))
        })?;
        let mut response = Fetch::Request(request)
            .send_with_signal(signal)
            .await
            .map_err(|e| ModelFailure::transient(format!("Model request failed: {e}")))?;
        let status = response.status_code();
        if !(200..300).contains(&status) {
            let header = |name: &str| response.headers().get(name).ok().flatten();
            let (retry_after_ms, retry_after) = (header("retry-after-ms"), header("retry-after"));
            let text = response.text().await.unwrap_or_default();
            return Err(ModelFailure::http(
                status,
                openai::http_error_text(status, &text),
                retry_after_ms.as_deref(),
                retry_after.as_deref(),
            ));
        }
        let mut stream = response
            .stream()
            .map_err(|e| ModelFailure::transient(format!("Model response has no body: {e}")))?;
        let mut decoder = StreamDecoder::new();
        let mut events = Vec::new();
        while let Some(chunk) = stream.next().await {
            let bytes =
                chunk.map_err(|e| ModelFailure::transient(format!("Model stream failed: {e}")))?;
            decoder
                .feed(&bytes, &mut events)
                .map_err(ModelFailure::from)?;
            self.deliver(call, &mut events);
            if decoder.is_finished() {
                return Ok(());
            }
        }
        decoder.finish(&mut events).map_err(ModelFailure::from)?;
        self.deliver(call, &mut events);
        Ok(())
    }

    fn deliver(self: &Rc<Self>, call: CallId, events: &mut Vec<crate::model::ModelEvent>) {
        for event in events.drain(..) {
            self.dispatch(Event::Model { call, event });
        }
    }
}

fn stored_name(store: &SqlStore) -> String {
    store
        .config_value(crate::core::ConfigKey::InstanceName)
        .ok()
        .flatten()
        .unwrap_or_else(|| "default".to_string())
}

/// What an authorisation hook sees of a request.
pub fn request_info(req: &Request) -> worker::Result<RequestInfo> {
    let url = req.url()?;
    Ok(RequestInfo {
        path: url.path().to_string(),
        query: url
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
        headers: req
            .headers()
            .entries()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect(),
    })
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// A WebSocket seen only through `send`, so a string already in JS can be sent.
    type JsSocket;

    #[wasm_bindgen(method, catch, js_name = send)]
    fn send(this: &JsSocket, data: &wasm_bindgen::JsValue) -> Result<(), wasm_bindgen::JsValue>;
}

fn send_js_string(
    socket: &worker::worker_sys::web_sys::WebSocket,
    text: &wasm_bindgen::JsValue,
) -> Result<(), wasm_bindgen::JsValue> {
    use wasm_bindgen::JsCast;
    socket.unchecked_ref::<JsSocket>().send(text)
}

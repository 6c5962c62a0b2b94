//! The seam between the agent and a model service, sans-I/O: a
//! [`ModelProvider`] says how to carry out a [`ModelRequest`] (a
//! [`CallPlan`] the host executes), decodes the streamed reply into
//! [`ModelEvent`]s and reads a refused call as a [`ModelFailure`]. The host
//! owns the connection and the clock; a provider is testable natively.

use super::{ModelEvent, ModelFailure, ModelRequest};

/// A model service the agent can stream a reply from. The built-in ones
/// (OpenAI-compatible, Anthropic Messages, Workers AI, scripted) implement
/// it, and so may an author's own: register it by name with
/// `AgentDefinition::model_providers` and pick it for a turn with
/// `TurnConfig::provider`. The trait is object-safe (`Rc<dyn ModelProvider>`).
pub trait ModelProvider {
    /// How the host carries out `request`.
    fn plan(&self, request: &ModelRequest) -> CallPlan;

    /// A fresh decoder for one call's response body: it turns the bytes
    /// into the crate's [`ModelEvent`]s.
    fn decoder(&self) -> Box<dyn ResponseDecoder>;

    /// The failure a non-2xx answer means. `body` is the response text and
    /// `header` looks up a response header by lower-case name.
    fn http_failure(
        &self,
        status: u16,
        body: &str,
        header: &dyn Fn(&str) -> Option<String>,
    ) -> ModelFailure;
}

/// What the host does to start a model call; each way the host can reach a
/// model is one variant.
#[derive(Debug, Clone, PartialEq)]
pub enum CallPlan {
    /// POST the request; a 2xx response body is fed to the provider's decoder,
    /// anything else to [`ModelProvider::http_failure`].
    Http(HttpRequest),
    /// Call `run(model, input)` on a binding of the Worker's environment;
    /// the streamed body it returns is fed to the provider's decoder.
    Binding(BindingCall),
    /// Nothing to carry out: the provider wrote the reply itself (the
    /// scripted model). Its events reach the agent as a stream's would.
    Local(LocalReply),
}

/// A reply a provider produced with no I/O: the events, then how the
/// stream ends (`Ok` once `Finished` is among the events, or a failure).
#[derive(Debug, Clone, PartialEq)]
pub struct LocalReply {
    pub events: Vec<ModelEvent>,
    pub end: Result<(), ModelFailure>,
}

/// A `POST` request, described.
#[derive(Clone, PartialEq)]
pub struct HttpRequest {
    pub url: String,
    /// In the order they are to be set; a later value of a name replaces an earlier one.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// Header values that carry credentials are shown as `<redacted>`.
impl std::fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let secret = matches!(
                    name.to_ascii_lowercase().as_str(),
                    "authorization" | "api-key" | "x-api-key" | "proxy-authorization"
                );
                (
                    name.as_str(),
                    if secret { "<redacted>" } else { value.as_str() },
                )
            })
            .collect();
        f.debug_struct("HttpRequest")
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body", &self.body)
            .finish()
    }
}

/// Raw response body bytes in, [`ModelEvent`]s out, for one call.
///
/// Feed every piece of the body as it arrives (any split is fine) to
/// [`decode`](Self::decode), then call [`end`](Self::end) once when the body
/// ends. Stop at the first `Err`. A successful stream ends with exactly one
/// [`ModelEvent::Finished`].
pub trait ResponseDecoder {
    /// Decodes the next piece of the body, appending events to `out`.
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), ModelFailure>;

    /// The body ended; a reply that was not finished is a failure.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelFailure>;

    /// True once `Finished` has been emitted; the rest of the body is moot.
    fn is_finished(&self) -> bool;
}

/// A call through a binding of the Worker's environment.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingCall {
    /// The binding's name in the environment (`AI`).
    pub binding: String,
    pub model: String,
    /// The input object, as JSON text.
    pub input: String,
    /// The options object (`run`'s third argument), as JSON text: the AI
    /// Gateway the call goes through (`None`: no options).
    pub options: Option<String>,
}

//! The providers an agent can call: the one its settings choose
//! (`MODEL_PROVIDER`), each built-in one that is configured, and an
//! author's own, each under a name a turn may pick (`TurnConfig::provider`).
//! [`ProviderSet::for_request`] answers which provider carries out one
//! request.

use std::rc::Rc;

use super::anthropic::AnthropicMessages;
use super::openai::OpenAiCompatible;
use super::scripted::ScriptedModel;
use super::workers_ai::WorkersAi;
use super::{ModelFailure, ModelProvider, ModelRequest};

/// One provider: a built-in one, or an author's (behind `Rc<dyn …>`).
#[derive(Debug, PartialEq)]
pub enum Provider {
    /// Any OpenAI-compatible Chat Completions API over HTTP (also an AI Gateway URL).
    OpenAiCompatible(OpenAiCompatible),
    /// Anthropic's Messages API over HTTP.
    Anthropic(AnthropicMessages),
    /// Workers AI (and gateway model slugs) through the Worker's `AI` binding.
    WorkersAi(WorkersAi),
    /// The scripted model: replies read from the conversation, no I/O.
    Scripted(ScriptedModel),
    /// A provider the author implemented.
    Custom(CustomProvider),
}

impl Provider {
    /// The provider as the trait the host drives.
    pub fn as_dyn(&self) -> &dyn ModelProvider {
        match self {
            Provider::OpenAiCompatible(p) => p,
            Provider::Anthropic(p) => p,
            Provider::WorkersAi(p) => p,
            Provider::Scripted(p) => p,
            Provider::Custom(p) => p.0.as_ref(),
        }
    }

    /// An author's provider.
    pub fn custom(provider: Rc<dyn ModelProvider>) -> Provider {
        Provider::Custom(CustomProvider(provider))
    }
}

/// An author's provider; two are equal when they are the same object.
#[derive(Clone)]
pub struct CustomProvider(pub Rc<dyn ModelProvider>);

impl PartialEq for CustomProvider {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for CustomProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CustomProvider")
    }
}

/// The agent's providers: its default (or the failure every call meets
/// when none is configured) and the ones a turn may pick by name.
#[derive(Debug)]
pub struct ProviderSet {
    default: Result<Provider, ModelFailure>,
    named: Vec<(String, Provider)>,
}

impl ProviderSet {
    pub fn new(default: Result<Provider, ModelFailure>) -> ProviderSet {
        ProviderSet {
            default,
            named: Vec::new(),
        }
    }

    /// Adds `provider` under `name` (a later one of the same name wins).
    pub fn with(mut self, name: &str, provider: Provider) -> ProviderSet {
        self.named.retain(|(n, _)| n != name);
        self.named.push((name.trim().to_string(), provider));
        self
    }

    /// The provider named `name` becomes the default too (an author's own
    /// named by `MODEL_PROVIDER`); no such name leaves the default as it is.
    pub fn default_to(mut self, name: &str) -> ProviderSet {
        let name = name.trim();
        if let Some(position) = self.named.iter().position(|(n, _)| n == name) {
            let provider = match &self.named[position].1 {
                Provider::Custom(p) => Provider::Custom(p.clone()),
                _ => return self,
            };
            self.default = Ok(provider);
        }
        self
    }

    /// Every Workers AI provider of the set mints its tool call ids under
    /// `prefix` (so they never repeat across instances).
    pub fn with_workers_ai_ids(mut self, prefix: &str) -> ProviderSet {
        let mint = |p: Provider, n: usize| match p {
            Provider::WorkersAi(p) => {
                Provider::WorkersAi(p.with_id_prefix(&format!("{prefix}{n}")))
            }
            other => other,
        };
        self.default = self.default.map(|p| mint(p, 0));
        self.named = std::mem::take(&mut self.named)
            .into_iter()
            .enumerate()
            .map(|(n, (name, p))| (name, mint(p, n + 1)))
            .collect();
        self
    }

    /// The names a turn may pick, in the order they were added.
    pub fn names(&self) -> Vec<&str> {
        self.named.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The provider that carries out `request`: the one its settings name
    /// (`ModelSettings::provider`), else the default.
    pub fn for_request(&self, request: &ModelRequest) -> Result<&dyn ModelProvider, ModelFailure> {
        match request.settings.provider.as_deref().map(str::trim) {
            None | Some("") => self
                .default
                .as_ref()
                .map(Provider::as_dyn)
                .map_err(Clone::clone),
            Some(name) => self
                .named
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, p)| p.as_dyn())
                .ok_or_else(|| {
                    ModelFailure::permanent(format!(
                        "No model provider named `{name}` (configured: {}).",
                        match self.names().join(", ") {
                            names if names.is_empty() => "none".to_string(),
                            names => names,
                        }
                    ))
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CallPlan, ResponseDecoder};

    struct Echo;
    impl ModelProvider for Echo {
        fn plan(&self, request: &ModelRequest) -> CallPlan {
            ScriptedModel::new().plan(request)
        }
        fn decoder(&self) -> Box<dyn ResponseDecoder> {
            ScriptedModel::new().decoder()
        }
        fn http_failure(
            &self,
            status: u16,
            _body: &str,
            _header: &dyn Fn(&str) -> Option<String>,
        ) -> ModelFailure {
            ModelFailure::permanent(format!("echo {status}"))
        }
    }

    fn asking(provider: Option<&str>) -> ModelRequest {
        let mut request = ModelRequest::user_text("m", "hi");
        request.settings.provider = provider.map(str::to_string);
        request
    }

    #[test]
    fn a_request_naming_a_provider_gets_it_and_others_get_the_default() {
        let set = ProviderSet::new(Ok(Provider::OpenAiCompatible(OpenAiCompatible::new(
            "http://h/v1",
            None,
        ))))
        .with("mine", Provider::custom(Rc::new(Echo)));
        let failure = |r: &ModelRequest| {
            set.for_request(r)
                .map(|p| p.http_failure(500, "", &|_| None).text)
        };
        assert_eq!(failure(&asking(Some(" mine "))), Ok("echo 500".to_string()));
        assert_ne!(failure(&asking(None)), Ok("echo 500".to_string()));
        assert_eq!(
            set.for_request(&asking(Some("gemini"))).err(),
            Some(ModelFailure::permanent(
                "No model provider named `gemini` (configured: mine)."
            ))
        );
    }

    #[test]
    fn without_a_default_only_named_providers_answer() {
        let set = ProviderSet::new(Err(ModelFailure::permanent("none")));
        assert!(set.for_request(&asking(None)).is_err());
    }
}

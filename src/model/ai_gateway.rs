//! Workers AI calls through an AI Gateway: the gateway options of the
//! binding's `run(model, input, {gateway})` (its id, whether to skip the
//! gateway's cache, how long it caches), as the binding takes them.

use serde::Serialize;
use serde_json::json;

/// The AI Gateway a Workers AI call goes through.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AiGateway {
    /// The gateway's id (its name in the dashboard).
    pub id: String,
    /// Answer from the model, never from the gateway's cache.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skip_cache: bool,
    /// How long the gateway caches an answer, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<u64>,
}

impl AiGateway {
    pub fn new(id: &str) -> AiGateway {
        AiGateway {
            id: id.to_string(),
            skip_cache: false,
            cache_ttl: None,
        }
    }

    /// The binding's third argument, as JSON text: `{"gateway": {…}}`.
    pub fn run_options(&self) -> String {
        json!({ "gateway": self }).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_name_the_gateway_as_the_binding_takes_them() {
        assert_eq!(
            AiGateway::new("support").run_options(),
            r#"{"gateway":{"id":"support"}}"#
        );
        let tuned = AiGateway {
            skip_cache: true,
            cache_ttl: Some(3600),
            ..AiGateway::new("support")
        };
        assert_eq!(
            tuned.run_options(),
            r#"{"gateway":{"id":"support","skipCache":true,"cacheTtl":3600}}"#
        );
    }
}

//! Calls through an AI Gateway: the gateway options of the binding's
//! `run(model, input, {gateway})` (its id, whether to skip the gateway's
//! cache, how long it caches, the call's metadata), as the binding takes
//! them, and the `cf-aig-metadata` header an HTTP call through a gateway
//! URL carries its metadata in.

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::ModelRequest;

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
        self.run_options_with(&Map::new())
    }

    /// The binding's third argument for one call, with its metadata
    /// (`gateway.metadata`, left out when empty).
    pub fn run_options_with(&self, metadata: &Map<String, Value>) -> String {
        let mut gateway = json!(self);
        if let (false, Some(fields)) = (metadata.is_empty(), gateway.as_object_mut()) {
            fields.insert("metadata".into(), Value::Object(metadata.clone()));
        }
        json!({ "gateway": gateway }).to_string()
    }
}

/// The `cf-aig-metadata` header of an HTTP call with gateway metadata
/// (an AI Gateway URL as the base URL logs it with the call).
pub fn metadata_header(request: &ModelRequest) -> Option<(String, String)> {
    let metadata = &request.settings.gateway_metadata;
    (!metadata.is_empty()).then(|| {
        (
            "cf-aig-metadata".to_string(),
            Value::Object(metadata.clone()).to_string(),
        )
    })
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
        let metadata = json!({"user": "u-7"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            AiGateway::new("support").run_options_with(&metadata),
            r#"{"gateway":{"id":"support","metadata":{"user":"u-7"}}}"#
        );
    }

    #[test]
    fn an_http_call_carries_its_metadata_in_a_header() {
        let mut request = ModelRequest::user_text("m", "hi");
        assert_eq!(metadata_header(&request), None);
        request
            .settings
            .gateway_metadata
            .insert("user".into(), json!("u-7"));
        assert_eq!(
            metadata_header(&request),
            Some(("cf-aig-metadata".into(), r#"{"user":"u-7"}"#.into()))
        );
    }
}

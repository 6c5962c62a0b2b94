//! What a streamed model reply produces: its events (text, reasoning, tool
//! calls, the finish with its reason and token usage) and the errors that
//! keep it from being read to its end.

/// What the provider stream says, in provider-neutral terms.
///
/// Tool calls are identified by `index`: `ToolCallStarted` comes exactly once per
/// index, before any `ToolCallArgumentsDelta` for that index. Concatenating the
/// argument deltas of one index gives the complete JSON arguments text (which is
/// untrusted model output and may still be invalid JSON).
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    TextDelta(String),
    ReasoningDelta(String),
    ToolCallStarted {
        index: u32,
        id: String,
        name: String,
    },
    ToolCallArgumentsDelta {
        index: u32,
        delta: String,
    },
    /// The last event of a successful stream; emitted at most once.
    Finished {
        reason: FinishReason,
        usage: Option<Usage>,
    },
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Other,
}

/// Token accounting reported by the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Tokens of the request (the input).
    pub prompt_tokens: u64,
    /// Tokens of the reply (the output).
    pub completion_tokens: u64,
    /// Input tokens the provider read from its prompt cache, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Input tokens the provider wrote to its prompt cache (Anthropic's
    /// `cache_creation_input_tokens`), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

impl Usage {
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// The sum of two reports (cached tokens: known if either knows them).
    pub fn plus(self, other: Usage) -> Usage {
        let either = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        let cached = either(self.cached_tokens, other.cached_tokens);
        Usage {
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_add(other.completion_tokens),
            cached_tokens: cached,
            cache_write_tokens: either(self.cache_write_tokens, other.cache_write_tokens),
        }
    }
}

/// Why a streamed reply could not be read to its end.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The provider reported an error inside the stream.
    #[error("model provider error: {0}")]
    Provider(String),
    /// The stream contained something we could not understand.
    #[error("malformed model stream: {0}")]
    Malformed(String),
    /// The stream ended before the provider said it was done.
    #[error("model stream ended before the reply was finished")]
    Truncated,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_up_and_cached_tokens_stay_unknown_until_reported() {
        let a = Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
            cached_tokens: None,
            cache_write_tokens: None,
        };
        let b = Usage {
            prompt_tokens: 7,
            completion_tokens: 3,
            cached_tokens: Some(4),
            cache_write_tokens: None,
        };
        assert_eq!(a.plus(a).cached_tokens, None);
        let sum = a.plus(b);
        assert_eq!(
            (sum.prompt_tokens, sum.completion_tokens, sum.cached_tokens),
            (17, 5, Some(4))
        );
        assert_eq!(sum.total_tokens(), 22);
    }

    #[test]
    fn errors_render_as_readable_sentences() {
        assert_eq!(
            ModelError::Provider("overloaded".into()).to_string(),
            "model provider error: overloaded"
        );
        assert_eq!(
            ModelError::Truncated.to_string(),
            "model stream ended before the reply was finished"
        );
    }
}

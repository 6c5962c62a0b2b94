//! Search over the whole stored history (not only the model's window): what
//! a hit is, the bounds on an answer (hits and bytes), and how a query from
//! the model or code becomes a full-text query (its words, each quoted, so
//! no query can be read as the search engine's own syntax). The store
//! answers it (`store/search.rs`, SQLite FTS5); the built-in
//! `search_context` tool and `AgentHandle::search_history` ask it.

use serde::Serialize;

/// The name of the built-in tool the model searches the history with.
pub const SEARCH_CONTEXT_TOOL: &str = "search_context";
/// Hits returned when no number is asked for.
pub const DEFAULT_HITS: usize = 5;
/// The most hits one search returns.
pub const MAX_HITS: usize = 20;
/// The most bytes of excerpts one search returns (the last hit is cut).
pub const MAX_HIT_BYTES: usize = 8 * 1024;
/// The most words of a query that are searched for.
pub const MAX_QUERY_WORDS: usize = 16;

/// One message that matched, with an excerpt around the match.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryHit {
    pub message_id: String,
    pub role: String,
    /// Where the message stands in the history (larger: newer).
    pub seq: u64,
    /// The matched text around the match, the matched words in `[…]`.
    pub excerpt: String,
}

/// The text a message is found by: its text parts, one per line.
pub fn searchable_text(message: &crate::protocol::UIMessage) -> String {
    let value = serde_json::to_value(message).unwrap_or_default();
    let parts = value.get("parts").and_then(|p| p.as_array());
    parts
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(|t| t.as_str()) == Some("text"))
        .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The full-text query for `query`: each of its words (letters and digits)
/// quoted, any word matching; `None` when it has none.
pub fn fts_query(query: &str) -> Option<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(MAX_QUERY_WORDS)
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

/// The number of hits for a request of `asked` (none: the default), within the bound.
pub fn hits_for(asked: Option<usize>) -> usize {
    asked.unwrap_or(DEFAULT_HITS).clamp(1, MAX_HITS)
}

/// Keeps hits within `MAX_HIT_BYTES` of excerpts, cutting the last one.
pub fn within_bytes(hits: Vec<HistoryHit>) -> Vec<HistoryHit> {
    let mut used = 0;
    let mut kept = Vec::new();
    for mut hit in hits {
        if used >= MAX_HIT_BYTES {
            break;
        }
        let room = MAX_HIT_BYTES - used;
        if hit.excerpt.len() > room {
            let mut cut = room;
            while !hit.excerpt.is_char_boundary(cut) {
                cut -= 1;
            }
            hit.excerpt.truncate(cut);
            hit.excerpt.push('…');
        }
        used += hit.excerpt.len();
        kept.push(hit);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_its_quoted_words_so_no_query_is_search_syntax() {
        assert_eq!(
            fts_query("cat's name? NEAR(x) \"a\" OR"),
            Some("\"cat\" OR \"s\" OR \"name\" OR \"NEAR\" OR \"x\" OR \"a\" OR \"OR\"".into())
        );
        assert_eq!(fts_query(" -*- "), None);
        assert_eq!(
            fts_query(&"w ".repeat(100)).map(|q| q.matches('w').count()),
            Some(MAX_QUERY_WORDS)
        );
    }

    #[test]
    fn answers_are_bounded_in_hits_and_bytes() {
        assert_eq!(hits_for(None), DEFAULT_HITS);
        assert_eq!(hits_for(Some(0)), 1);
        assert_eq!(hits_for(Some(1000)), MAX_HITS);
        let hit = |n: u64| HistoryHit {
            message_id: format!("m{n}"),
            role: "user".into(),
            seq: n,
            excerpt: "é".repeat(3000),
        };
        let kept = within_bytes((0..5).map(hit).collect());
        assert_eq!(kept.len(), 2);
        let bytes: usize = kept.iter().map(|h| h.excerpt.len()).sum();
        assert!(bytes <= MAX_HIT_BYTES + '…'.len_utf8(), "{bytes}");
    }
}

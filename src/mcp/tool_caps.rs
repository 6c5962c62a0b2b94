//! What an MCP server's handshake may make the agent keep and copy into
//! every model request and every tab's frame: each tool's spec at most
//! `MAX_TOOL_SPEC_BYTES` of JSON and the tools of all servers together at
//! most `MAX_TOOL_SPECS_BYTES` (the caps client tools have), the server's
//! instructions and capabilities small. A tool over a cap is left out (the
//! server's other tools stay) and named in the server's status.

use std::io::Write;

use serde_json::{Map, Value};

/// The most JSON bytes of one tool's spec (as one client tool's).
pub const MAX_TOOL_SPEC_BYTES: usize = 32 * 1024;
/// The most JSON bytes of the tools of all servers together (as all
/// client tools of a request).
pub const MAX_TOOL_SPECS_BYTES: usize = 256 * 1024;
/// The most bytes of a server's `instructions` kept (cut at a character).
pub const MAX_INSTRUCTIONS_BYTES: usize = 16 * 1024;
/// The most JSON bytes of a server's capabilities kept whole (past it,
/// only their names).
pub const MAX_CAPABILITIES_BYTES: usize = 16 * 1024;
/// The most left-out tools a status names.
const NAMED_IN_STATUS: usize = 5;
/// The most characters of a left-out tool's name in a status.
const MAX_NAME_CHARS: usize = 64;

/// Which cap a tool passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// `MAX_TOOL_SPEC_BYTES`.
    Each,
    /// `MAX_TOOL_SPECS_BYTES`.
    All,
}

/// A tool left out, its spec's size and the cap it passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub name: String,
    pub bytes: usize,
    pub cap: Cap,
}

/// The bytes of `value` as JSON, counted without writing them anywhere.
pub fn json_bytes(value: &Value) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// The tools of `tools` within the caps, given `room` bytes left of the
/// total, with their bytes; the others are noted in `left_out`.
pub fn keep_within(
    tools: Vec<Value>,
    room: usize,
    left_out: &mut Vec<LeftOut>,
) -> (Vec<Value>, usize) {
    let mut kept = Vec::new();
    let mut used = 0usize;
    for tool in tools {
        let bytes = json_bytes(&tool);
        let cap = if bytes > MAX_TOOL_SPEC_BYTES {
            Some(Cap::Each)
        } else if used.saturating_add(bytes) > room {
            Some(Cap::All)
        } else {
            None
        };
        match cap {
            None => {
                used += bytes;
                kept.push(tool);
            }
            Some(cap) => left_out.push(LeftOut {
                name: tool
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .chars()
                    .take(MAX_NAME_CHARS)
                    .collect(),
                bytes,
                cap,
            }),
        }
    }
    (kept, used)
}

/// What a ready server's status says of the tools left out (`None`: none).
pub fn status(left_out: &[LeftOut]) -> Option<String> {
    if left_out.is_empty() {
        return None;
    }
    let mut named: Vec<String> = left_out
        .iter()
        .take(NAMED_IN_STATUS)
        .map(|t| {
            let cap = match t.cap {
                Cap::Each => format!("one tool's spec may have {MAX_TOOL_SPEC_BYTES}"),
                Cap::All => {
                    format!("the tools of all servers together may have {MAX_TOOL_SPECS_BYTES}")
                }
            };
            format!("'{}' ({} bytes; {cap})", t.name, t.bytes)
        })
        .collect();
    if left_out.len() > NAMED_IN_STATUS {
        named.push(format!("and {} more", left_out.len() - NAMED_IN_STATUS));
    }
    Some(format!(
        "{} tool{} left out: {}",
        left_out.len(),
        if left_out.len() == 1 { "" } else { "s" },
        named.join(", ")
    ))
}

/// A server's instructions, cut to `MAX_INSTRUCTIONS_BYTES`.
pub fn instructions(text: &str) -> String {
    if text.len() <= MAX_INSTRUCTIONS_BYTES {
        return text.to_string();
    }
    let mut end = MAX_INSTRUCTIONS_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A server's capabilities, whole within `MAX_CAPABILITIES_BYTES`; past
/// it, only the names of the first ones (each with `{}`).
pub fn capabilities(value: Value) -> Value {
    if json_bytes(&value) <= MAX_CAPABILITIES_BYTES {
        return value;
    }
    let names = match &value {
        Value::Object(map) => map.keys().take(32).cloned().collect(),
        _ => Vec::new(),
    };
    let mut out = Map::new();
    for name in names {
        if name.len() <= 64 {
            out.insert(name, Value::Object(Map::new()));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description_bytes: usize) -> Value {
        json!({"name": name, "description": "d".repeat(description_bytes), "inputSchema": {"type": "object"}})
    }

    #[test]
    fn json_bytes_counts_what_serializing_writes() {
        let v = json!({"a": [1, "two", null], "b": "é"});
        assert_eq!(json_bytes(&v), v.to_string().len());
    }

    #[test]
    fn a_tool_over_its_cap_is_left_out_and_the_others_stay() {
        let mut left_out = Vec::new();
        let tools = vec![
            tool("small", 10),
            tool("huge", 3 * 1024 * 1024),
            tool("also", 10),
        ];
        let (kept, bytes) = keep_within(tools, MAX_TOOL_SPECS_BYTES, &mut left_out);
        let names: Vec<_> = kept.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["small", "also"]);
        assert_eq!(bytes, json_bytes(&kept[0]) + json_bytes(&kept[1]));
        assert_eq!(left_out.len(), 1);
        assert_eq!(
            (left_out[0].name.as_str(), left_out[0].cap),
            ("huge", Cap::Each)
        );
        let said = status(&left_out).unwrap();
        assert!(said.starts_with("1 tool left out: 'huge' ("), "{said}");
        assert!(said.contains("one tool's spec may have 32768"), "{said}");
    }

    #[test]
    fn tools_past_the_room_left_of_the_total_are_left_out() {
        let mut left_out = Vec::new();
        let tools: Vec<_> = (0..12).map(|i| tool(&format!("t{i}"), 30_000)).collect();
        let (kept, bytes) = keep_within(tools, 100_000, &mut left_out);
        assert_eq!(kept.len(), 3);
        assert!(bytes <= 100_000);
        assert_eq!(left_out.len(), 9);
        assert!(left_out.iter().all(|t| t.cap == Cap::All));
        let said = status(&left_out).unwrap();
        assert!(said.starts_with("9 tools left out: 't3'"), "{said}");
        assert!(said.ends_with("and 4 more"), "{said}");
        assert_eq!(status(&[]), None);
    }

    #[test]
    fn instructions_and_capabilities_are_kept_small() {
        let long = "é".repeat(MAX_INSTRUCTIONS_BYTES);
        let cut = instructions(&long);
        assert!(cut.len() <= MAX_INSTRUCTIONS_BYTES + '…'.len_utf8());
        assert_eq!(instructions("short"), "short");
        let small = json!({"tools": {"listChanged": true}});
        assert_eq!(capabilities(small.clone()), small);
        let big = json!({"tools": {"x": "y".repeat(MAX_CAPABILITIES_BYTES)}, "prompts": {}});
        assert_eq!(capabilities(big), json!({"tools": {}, "prompts": {}}));
    }

    #[test]
    fn the_caps_are_those_of_client_tools() {
        let limits = crate::core::Limits::default();
        assert_eq!(MAX_TOOL_SPEC_BYTES, limits.max_client_tool_bytes);
        assert_eq!(MAX_TOOL_SPECS_BYTES, limits.max_client_tools_bytes);
    }
}

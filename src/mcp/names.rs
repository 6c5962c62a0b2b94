//! The names the model sees. A server's id is its name normalized
//! (lower-case ASCII letters and digits, other runs of characters one `-`,
//! at most `MAX_SERVER_ID` characters). Its tools are offered as
//! `mcp_<server id>_<tool>`, the tool's name with every character outside
//! `[A-Za-z0-9_-]` made `_`. The id holds no `_`, so the part before the
//! second `_` names one server: two servers' tools never collide. Within
//! one server, a name that would be longer than 64 characters (the longest
//! tool name model providers take) or equal to one already taken (another
//! tool of the server after normalization, or one of the agent's own tools)
//! is cut and ends in `_` and 8 hex digits of a hash of the tool's name.

use std::collections::HashSet;

use super::jsonrpc::McpError;

/// The prefix of every MCP tool's name.
pub const MCP_TOOL_PREFIX: &str = "mcp_";
/// The longest server id.
pub const MAX_SERVER_ID: usize = 24;
/// The longest tool name offered to a model.
pub const MAX_TOOL_NAME: usize = 64;

/// The id of a server named `name`.
pub fn server_id(name: &str) -> Result<String, McpError> {
    let mut id = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if !id.is_empty() && !id.ends_with('-') {
            id.push('-');
        }
        if id.len() >= MAX_SERVER_ID {
            break;
        }
    }
    let id = id.trim_end_matches('-').to_string();
    if id.is_empty() {
        return Err(McpError::Malformed(format!(
            "the server name '{name}' has no letter or digit to name its tools by"
        )));
    }
    Ok(id)
}

/// Gives each tool of one server its name (see the module header).
pub struct ToolNames<'a> {
    prefix: String,
    taken: &'a mut HashSet<String>,
}

impl<'a> ToolNames<'a> {
    /// Names for server `id`'s tools; `taken` holds the names in use (the
    /// agent's own tools, other servers' tools) and gains each one given.
    pub fn new(id: &str, taken: &'a mut HashSet<String>) -> Self {
        ToolNames {
            prefix: format!("{MCP_TOOL_PREFIX}{id}_"),
            taken,
        }
    }

    /// The name the model sees for the server's tool `tool`.
    pub fn name(&mut self, tool: &str) -> String {
        let clean: String = tool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let plain = format!("{}{clean}", self.prefix);
        if plain.len() <= MAX_TOOL_NAME && !self.taken.contains(&plain) {
            self.taken.insert(plain.clone());
            return plain;
        }
        let hash = fnv1a(tool.as_bytes());
        for n in 0u64.. {
            let suffix = format!("_{:08x}", hash.wrapping_add(n) as u32);
            let keep = MAX_TOOL_NAME - suffix.len();
            let mut head = plain.clone();
            head.truncate(keep);
            let name = format!("{head}{suffix}");
            if !self.taken.contains(&name) {
                self.taken.insert(name.clone());
                return name;
            }
        }
        unreachable!("a free name is always found")
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_name_becomes_an_id_without_underscores() {
        assert_eq!(server_id("Demo Tools!").unwrap(), "demo-tools");
        assert_eq!(server_id("my_server").unwrap(), "my-server");
        assert_eq!(
            server_id("a-very-long-server-name-that-goes-on").unwrap(),
            "a-very-long-server-name"
        );
        assert!(server_id("___").is_err());
    }

    #[test]
    fn tools_are_prefixed_by_their_server_and_cleaned() {
        let mut taken = HashSet::new();
        let mut names = ToolNames::new("demo", &mut taken);
        assert_eq!(names.name("add"), "mcp_demo_add");
        assert_eq!(names.name("files.read"), "mcp_demo_files_read");
    }

    #[test]
    fn names_that_collide_or_run_long_get_a_hash_suffix() {
        let mut taken: HashSet<String> = ["mcp_demo_add".to_string()].into();
        let mut names = ToolNames::new("demo", &mut taken);
        let add = names.name("add");
        assert!(
            add.starts_with("mcp_demo_add_") && add.len() == "mcp_demo_add_".len() + 8,
            "{add}"
        );
        let a = names.name("a.b");
        let b = names.name("a_b");
        assert_ne!(a, b);
        let long = names.name(&"x".repeat(100));
        assert_eq!(long.len(), MAX_TOOL_NAME);
        assert!(long.starts_with("mcp_demo_xxx"));
        // The same list gives the same names.
        let mut again = HashSet::from(["mcp_demo_add".to_string()]);
        assert_eq!(ToolNames::new("demo", &mut again).name("add"), add);
    }

    #[test]
    fn two_servers_never_give_the_same_name() {
        // Server "a" with tool "b_c" and server "a-b" with tool "c".
        let mut taken = HashSet::new();
        let one = ToolNames::new(&server_id("a").unwrap(), &mut taken).name("b_c");
        let two = ToolNames::new(&server_id("a_b").unwrap(), &mut taken).name("c");
        assert_eq!((one.as_str(), two.as_str()), ("mcp_a_b_c", "mcp_a-b_c"));
    }
}

//! Test-only switches of the host, off unless the worker's var
//! `DEBUG_TOOLS=1` is set (never set it in production): a server tool
//! `large_output {bytes}` whose output is a string of about that many bytes
//! (to test values over the storage row limit end to end), and the route
//! `POST …/__debug/fail-next-message-write`, after which the next write of a
//! message is refused inside its transaction (to test how a failed write is
//! handled on the real storage path); `POST …/__debug/fail-next-state-write`
//! does the same for the next write of the synced state.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::agent::tools::ServerTool;

/// The var that turns these on.
pub const DEBUG_TOOLS_VAR: &str = "DEBUG_TOOLS";

/// The route that arms the injected write failure (under the agent's path).
pub const FAIL_NEXT_MESSAGE_WRITE: &str = "/__debug/fail-next-message-write";

/// The route that arms an injected failure of the next synced-state write.
pub const FAIL_NEXT_STATE_WRITE: &str = "/__debug/fail-next-state-write";

/// The most `large_output` returns.
const MAX_BYTES: usize = 16_000_000;

#[derive(Deserialize, JsonSchema)]
pub struct LargeOutputInput {
    /// How many bytes the output string holds (about).
    pub bytes: usize,
}

/// The tools `DEBUG_TOOLS=1` adds to every agent.
pub fn tools() -> Vec<ServerTool> {
    vec![ServerTool::new(
        "large_output",
        "Test only: returns a string of about `bytes` bytes.",
        |input: LargeOutputInput| async move {
            Ok::<_, String>(serde_json::json!({ "blob": filler(input.bytes.min(MAX_BYTES)) }))
        },
    )]
}

/// About `bytes` bytes of text mixing one- to four-byte characters (a split
/// inside a character would show), numbered so that no two pieces are alike.
pub fn filler(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 32);
    let mut n = 0u64;
    while out.len() < bytes {
        out.push_str(&format!("{n}-é€😀-"));
        n += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn filler_is_about_the_size_asked() {
        let text = super::filler(3_000_000);
        assert!(text.len() >= 3_000_000 && text.len() < 3_000_032);
        assert_eq!(super::filler(0), "");
    }
}

//! The running turn.

mod approvals;
mod client_tools;
mod compaction;
mod context;
mod context_blocks;
mod deadlines;
mod error_decisions;
mod files;
mod large_values;
mod logs;
mod mcp_tools;
mod model_options;
mod model_retry;
mod response_outbox;
mod server_tools;
mod step_hooks;
mod summarizing;
mod tool_decisions;
mod tool_hooks;
mod tool_rewrites;
mod turn_end_lists;
mod turn_hooks;
mod turns;
mod usage_metadata;

//! Server tools: the one builder an author uses (`ServerTool::new` with a
//! typed input, and optionally the run's [`ToolContext`]), the JSON schema
//! taken from the input type, and the type-erased run the host calls. A
//! tool's error may be any type that displays: its text is the tool error
//! the model reads.

pub mod context;

use std::rc::Rc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::core::{ApprovalRule, ToolSpec};

use crate::agent::tools::context::ToolContext;
use crate::agent::typed_handler::{erase, Erasure, JsonFuture, TypedHandler};

/// A type-erased tool run: the output as JSON, or the error text the model reads.
pub type ToolFuture = JsonFuture;

/// A tool the agent runs itself. Its JSON schema comes from the input type.
///
/// ```ignore
/// ServerTool::new("lookup_order", "Find an order", |input: Lookup| async move {
///     Ok::<_, String>(json!({ "order": input.order, "status": "shipped" }))
/// });
/// // With the run's context (tool call id, abort signal, messages, env):
/// ServerTool::new("summarize", "Summarize a page", |input: Page, ctx: ToolContext| async move {
///     fetch_page(&input.url, ctx.abort).await // Result<Summary, MyError>, MyError: Display
/// });
/// ```
#[derive(Clone)]
pub struct ServerTool {
    pub(crate) spec: ToolSpec,
    run: Rc<dyn Fn(Value, ToolContext) -> ToolFuture>,
}

impl ServerTool {
    /// `run` gets the model's input parsed as `I` (and, if it takes a second
    /// argument, the run's [`ToolContext`]: its tool call id, an abort signal
    /// that fires when the turn is cancelled, the turn's recent messages and
    /// the agent's env). Its `Ok` value becomes the tool output, its `Err`'s
    /// text the tool error the model reads.
    pub fn new<I, Shape, H>(name: &str, description: &str, run: H) -> Self
    where
        I: DeserializeOwned + JsonSchema + 'static,
        H: TypedHandler<I, ToolContext, Shape>,
    {
        let how = Erasure {
            read: serde_json::from_value::<I>,
            unreadable: |tool, e| format!("Invalid input for tool '{tool}': {e}"),
            unserializable: |tool, e| format!("Tool '{tool}' returned unserializable output: {e}"),
        };
        ServerTool {
            spec: ToolSpec::new(name, description, input_schema::<I>()),
            run: erase(name, run, how),
        }
    }

    /// The tool's name, as the model calls it.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// A person approves each call (or the calls `rule` picks) before it runs.
    /// Such a tool is not overridable by a client tool unless marked `overridable()`.
    pub fn needs_approval(mut self, rule: ApprovalRule) -> Self {
        self.spec.approval = rule;
        self
    }

    /// A client tool of the same name never replaces this tool.
    pub fn not_overridable(mut self) -> Self {
        self.spec = self.spec.not_overridable();
        self
    }

    /// A client tool of the same name replaces this tool even if it needs approval.
    pub fn overridable(mut self) -> Self {
        self.spec = self.spec.overridable();
        self
    }

    /// A run still going after `ms` ends as a tool error the model reads
    /// (default: the settings' `tool_timeout_ms`, five minutes).
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.spec = self.spec.timeout_ms(ms);
        self
    }

    /// Offered only in turns whose `before_turn` adds it (`TurnConfig::add_tools`).
    pub fn opt_in(mut self) -> Self {
        self.spec = self.spec.opt_in();
        self
    }

    /// Runs the tool outside an agent (no env, a signal that never fires):
    /// for an author's unit tests.
    pub fn call(&self, input: Value) -> ToolFuture {
        self.call_with(input, ToolContext::default())
    }

    /// Runs the tool with its context.
    pub fn call_with(&self, input: Value, ctx: ToolContext) -> ToolFuture {
        (self.run)(input, ctx)
    }
}

/// The JSON schema of a tool input type, without the meta keys models ignore.
pub fn input_schema<I: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(I)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    if !schema.is_object() {
        schema = serde_json::json!({"type": "object"});
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::fmt::Display;

    #[derive(Deserialize, JsonSchema)]
    struct WeatherInput {
        /// The city to look up.
        city: String,
    }

    #[test]
    fn tool_schema_comes_from_the_input_type() {
        let schema = input_schema::<WeatherInput>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["city"]["type"], "string");
        assert_eq!(schema["required"], serde_json::json!(["city"]));
        assert!(schema.get("$schema").is_none());
    }

    #[derive(Debug)]
    struct Closed(&'static str);

    impl Display for Closed {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{} is closed", self.0)
        }
    }

    #[test]
    fn one_builder_takes_either_shape_and_any_error_that_displays() {
        let plain = ServerTool::new("w", "weather", |input: WeatherInput| async move {
            Ok::<_, String>(serde_json::json!({ "city": input.city }))
        });
        let with_ctx = ServerTool::new(
            "c",
            "call id",
            |input: WeatherInput, ctx: ToolContext| async move {
                match input.city.as_str() {
                    "Atlantis" => Err(Closed("Atlantis")),
                    _ => Ok(ctx.tool_call_id),
                }
            },
        );
        let run = |tool: &ServerTool, input: Value| futures::executor::block_on(tool.call(input));
        assert_eq!(plain.name(), "w");
        assert_eq!(
            run(&plain, serde_json::json!({"city": "Paris"})),
            Ok(serde_json::json!({"city": "Paris"}))
        );
        assert_eq!(
            run(&with_ctx, serde_json::json!({"city": "Atlantis"})),
            Err("Atlantis is closed".to_string())
        );
        assert_eq!(
            run(&with_ctx, serde_json::json!({"city": "Oslo"})),
            Ok(serde_json::json!(""))
        );
        let refused = run(&plain, serde_json::json!({"town": 1}));
        assert!(
            matches!(&refused, Err(e) if e.starts_with("Invalid input for tool 'w'")),
            "{refused:?}"
        );
    }
}

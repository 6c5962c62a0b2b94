//! The agent as an author writes it, in layers (each file uses only the ones
//! below it):
//!
//! 1. vocabulary: `tool_context` (what a tool run gets), `tool` (the server
//!    tool builder), `settings` (settings and worker vars), `access` (who may
//!    connect), `channel_auth` (the deployment's internal credential);
//! 2. `handle` (the agent's own code reaching its agent, over a narrow trait
//!    the host implements);
//! 3. `definition` (the `AgentDefinition` trait an author implements);
//! 4. `engine_config` (a definition turned into the core's configuration),
//!    `debug_tools`, `remote` (submissions from other agents), `subagent`
//!    (a parent's `chat()` to a child);
//! 5. `host` (runs the core in a Durable Object), on top, with the
//!    `chat_agent!` macro that declares the Durable Object class.

pub mod access;
#[cfg(target_arch = "wasm32")]
mod binding_model;
pub mod channel_auth;
#[doc(hidden)]
pub mod debug_tools;
pub mod definition;
#[cfg(any(target_arch = "wasm32", test))]
mod engine_config;
#[cfg(target_arch = "wasm32")]
pub mod handle;
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod host;
#[cfg(target_arch = "wasm32")]
mod ids;
#[cfg(target_arch = "wasm32")]
pub mod remote;
pub mod settings;
#[cfg(target_arch = "wasm32")]
pub mod subagent;
pub mod tool;
pub mod tool_context;

pub use access::{Refusal, RequestInfo};
pub use definition::AgentDefinition;
#[cfg(target_arch = "wasm32")]
pub use handle::{AgentHandle, Submission, SubmitOptions};
#[cfg(target_arch = "wasm32")]
pub use remote::AgentStub;
pub use settings::{AgentSettings, Vars};
pub use tool::{ServerTool, ToolFuture, ToolHandler};
pub use tool_context::{AbortSignal, AgentEnv, ToolContext};

/// Declares a Durable Object class `$class` that runs the agent built by
/// `$make` (a closure from `&worker::Env` to an `AgentDefinition`).
/// `$agent` is the kebab-case class name sent in the identity frame.
///
/// ```ignore
/// durable_chat::chat_agent!(ChatAgent, |_env: &worker::Env| MyAgent, "chat-agent");
/// ```
#[macro_export]
macro_rules! chat_agent {
    ($class:ident, $make:expr, $agent:literal) => {
        #[::worker::durable_object]
        pub struct $class {
            host: ::core::result::Result<
                ::std::rc::Rc<$crate::agent::host::AgentHost>,
                ::std::string::String,
            >,
        }

        impl ::worker::DurableObject for $class {
            fn new(state: ::worker::State, env: ::worker::Env) -> Self {
                let make = $make;
                let definition = make(&env);
                let host = $crate::agent::host::AgentHost::new(state, env, definition, $agent)
                    .map_err(|e| e.to_string());
                if let Err(e) = &host {
                    $crate::log::write(
                        $crate::log::LogLevel::Error,
                        &::std::format!("agent failed to start: {e}"),
                    );
                }
                Self { host }
            }

            async fn fetch(&self, req: ::worker::Request) -> ::worker::Result<::worker::Response> {
                match &self.host {
                    Ok(host) => host.fetch(req).await,
                    Err(e) => ::worker::Response::error(format!("agent failed to start: {e}"), 500),
                }
            }

            async fn websocket_message(
                &self,
                ws: ::worker::WebSocket,
                message: ::worker::WebSocketIncomingMessage,
            ) -> ::worker::Result<()> {
                if let Ok(host) = &self.host {
                    host.on_message(ws, message);
                }
                Ok(())
            }

            async fn websocket_close(
                &self,
                ws: ::worker::WebSocket,
                _code: usize,
                _reason: ::std::string::String,
                _was_clean: bool,
            ) -> ::worker::Result<()> {
                if let Ok(host) = &self.host {
                    host.on_close(ws);
                }
                Ok(())
            }

            async fn websocket_error(
                &self,
                ws: ::worker::WebSocket,
                _error: ::worker::Error,
            ) -> ::worker::Result<()> {
                if let Ok(host) = &self.host {
                    host.on_close(ws);
                }
                Ok(())
            }

            async fn alarm(&self) -> ::worker::Result<::worker::Response> {
                if let Ok(host) = &self.host {
                    host.on_alarm();
                }
                ::worker::Response::ok("")
            }

            async fn connect(&self, _socket: ::worker::Socket) -> ::worker::Result<()> {
                Err(::worker::Error::RustError(
                    "TCP connections are not served".into(),
                ))
            }
        }
    };
}

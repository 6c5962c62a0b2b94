//! `chat_agent!`: declares the Durable Object class that runs an agent
//! definition, reaching the host through the crate's hidden `__private`
//! paths.

/// Declares a Durable Object class `$class` that runs the agent built by
/// `$make` (a closure from `&worker::Env` to an `AgentDefinition`). The
/// agent's name in the identity frame is the class name in kebab case, the
/// client's rule (`ChatAgent` → `chat-agent`); an explicit third argument
/// still names it (the older form).
///
/// The class also gets the agent's methods over Durable Object RPC (see
/// `agent::rpc_target`), reached through the bridge class the build
/// generates around it.
///
/// ```ignore
/// durable_chat::chat_agent!(ChatAgent, |_env: &worker::Env| MyAgent);
/// ```
#[macro_export]
macro_rules! chat_agent {
    ($class:ident, $make:expr, $agent:literal $(,)?) => {
        $crate::chat_agent!(@class $class, $make, $agent);
    };
    ($class:ident, $make:expr $(,)?) => {
        $crate::chat_agent!(
            @class $class,
            $make,
            &$crate::__private::kebab(::core::stringify!($class))
        );
    };
    (@class $class:ident, $make:expr, $agent:expr) => {
        #[::worker::durable_object]
        pub struct $class {
            // Started by the first request `authorize` lets in (or an RPC
            // call, an alarm, a socket's message): see `LazyHost`.
            host: $crate::__private::LazyHost,
        }

        impl ::worker::DurableObject for $class {
            fn new(state: ::worker::State, env: ::worker::Env) -> Self {
                let make = $make;
                let definition = make(&env);
                Self {
                    host: $crate::__private::LazyHost::new(state, env, definition, $agent),
                }
            }

            async fn fetch(&self, req: ::worker::Request) -> ::worker::Result<::worker::Response> {
                self.host.fetch(req).await
            }

            async fn websocket_message(
                &self,
                ws: ::worker::WebSocket,
                message: ::worker::WebSocketIncomingMessage,
            ) -> ::worker::Result<()> {
                if let Ok(host) = self.host.get() {
                    host.ready().await;
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
                if let Ok(host) = self.host.get() {
                    host.ready().await;
                    host.on_close(ws);
                }
                Ok(())
            }

            async fn websocket_error(
                &self,
                ws: ::worker::WebSocket,
                _error: ::worker::Error,
            ) -> ::worker::Result<()> {
                if let Ok(host) = self.host.get() {
                    host.ready().await;
                    host.on_close(ws);
                }
                Ok(())
            }

            async fn alarm(&self) -> ::worker::Result<::worker::Response> {
                if let Ok(host) = self.host.get() {
                    host.ready().await;
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

        // The agent's RPC methods (`chat`, `submitMessages`, …), which the
        // bridge class the build generates (scripts/rpc-bridge.mjs) forwards
        // here by name; its presence marks the class as an agent.
        const _: () = {
            use ::worker::wasm_bindgen::prelude::*;

            #[wasm_bindgen(wasm_bindgen = ::worker::wasm_bindgen, js_sys = ::worker::js_sys)]
            impl $class {
                #[wasm_bindgen(js_name = durableChatRpc)]
                pub fn durable_chat_rpc(
                    &self,
                    method: ::std::string::String,
                    args: ::worker::js_sys::Array,
                ) -> ::worker::js_sys::Promise {
                    $crate::__private::rpc_call(self.host.get(), &method, args)
                }

                /// The names of the author's own RPC methods, which the
                /// bridge class exposes beside the built-in ones.
                #[wasm_bindgen(js_name = durableChatRpcMethods)]
                pub fn durable_chat_rpc_methods(&self) -> ::worker::js_sys::Array {
                    $crate::__private::rpc_method_names(self.host.get())
                }

                /// The largest WebSocket message the agent takes, for the
                /// bridge to refuse a larger one before copying it in.
                #[wasm_bindgen(js_name = durableChatFrameLimit)]
                pub fn durable_chat_frame_limit(&self) -> f64 {
                    match self.host.get() {
                        Ok(host) => host.frame_limit() as f64,
                        Err(_) => $crate::__private::DEFAULT_FRAME_LIMIT as f64,
                    }
                }

                /// A message over that limit, kept in JS: its size and first
                /// characters; answered with the agent's error frame.
                #[wasm_bindgen(js_name = durableChatFrameTooLarge)]
                pub fn durable_chat_frame_too_large(
                    &self,
                    ws: ::worker::worker_sys::web_sys::WebSocket,
                    bytes: f64,
                    head: ::std::string::String,
                ) {
                    if let Ok(host) = self.host.get() {
                        host.on_large_message(::worker::WebSocket::from(ws), bytes as usize, head);
                    }
                }
            }
        };
    };
}

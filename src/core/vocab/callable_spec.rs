//! A callable method as the core sees it: its name and description, and the
//! flags that decide how a call to it is admitted (whether it streams, a
//! readonly connection may call it, it is also an RPC method). The host
//! holds the code that runs it, as it does a tool's beside its `ToolSpec`.

/// A method a connected client may call by name (`rpc` frames).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallableSpec {
    pub name: String,
    /// What the method does, for whoever lists the agent's methods.
    pub description: String,
    /// Replies `done: false` before the last, and is cancelled when its
    /// caller's socket closes.
    pub streaming: bool,
    /// A readonly connection may call it too; any other method is refused
    /// to one with `Connection is readonly`.
    pub readonly_safe: bool,
    /// Also an RPC method of the agent's Durable Object (`stub.<name>(…)`).
    pub over_rpc: bool,
}

impl CallableSpec {
    /// A plain method: not streaming, refused to a readonly connection, not
    /// over RPC.
    pub fn new(name: &str) -> Self {
        CallableSpec {
            name: name.to_string(),
            description: String::new(),
            streaming: false,
            readonly_safe: false,
            over_rpc: false,
        }
    }

    pub fn description(mut self, text: &str) -> Self {
        self.description = text.to_string();
        self
    }

    pub fn streaming(mut self) -> Self {
        self.streaming = true;
        self
    }

    pub fn readonly_safe(mut self) -> Self {
        self.readonly_safe = true;
        self
    }

    pub fn over_rpc(mut self) -> Self {
        self.over_rpc = true;
        self
    }
}

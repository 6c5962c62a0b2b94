//! Context blocks: named, size-bounded pieces of text the agent keeps with
//! it and shows the model at the start of every request (after the system
//! prompt), which the model may rewrite through the built-in `set_context`
//! tool and the author's code through the handle. The declaration is the
//! author's; the stored text is the agent's (`ConfigKey::ContextBlocks`).

/// The name of the built-in tool the model writes a block with.
pub const SET_CONTEXT_TOOL: &str = "set_context";

/// One block the agent keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextBlock {
    /// How the model and the code name it (`memory`, `user_profile`, …).
    pub name: String,
    /// What it is for, as the model is told.
    pub description: String,
    /// The most bytes of text it holds; a longer write is refused.
    pub max_bytes: usize,
    /// Its text until something writes it.
    pub initial: String,
    /// Whether the model may rewrite it (`set_context`); else only code may.
    pub model_writes: bool,
}

impl ContextBlock {
    /// A block the model may write, of at most `max_bytes`, empty at first.
    pub fn new(name: &str, description: &str, max_bytes: usize) -> ContextBlock {
        ContextBlock {
            name: name.to_string(),
            description: description.to_string(),
            max_bytes,
            initial: String::new(),
            model_writes: true,
        }
    }

    /// The same block with `text` until something writes it.
    pub fn with_initial(mut self, text: &str) -> ContextBlock {
        self.initial = text.to_string();
        self
    }

    /// The same block, written by the author's code only.
    pub fn read_only(mut self) -> ContextBlock {
        self.model_writes = false;
        self
    }
}

/// Why a write to a block was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextBlockError {
    #[error("no context block named `{0}`")]
    Unknown(String),
    #[error("the context block `{name}` holds at most {max} bytes; the text has {given}")]
    TooLong {
        name: String,
        max: usize,
        given: usize,
    },
    #[error("the context block `{0}` is written by the agent's code only")]
    ReadOnly(String),
}

//! What a turn hands back to the folders above it instead of calling them
//! (control flows one way, see `core/mod.rs`): that it ended, that a person
//! answered one of its calls, that the tabs' results it held turns for have
//! landed. `Core::settle` (`core/settle.rs`) carries them out in order once
//! the event or command that produced them is done: a recovery chain ends,
//! an owed continuation is asked for or queued, and admit's pump decides
//! what runs next.

use std::collections::VecDeque;

use crate::protocol::ClientToolSchema;

use crate::core::vocab::ids::ConnId;

/// One thing a turn hands back.
#[derive(Debug)]
pub(in crate::core) enum HandedBack {
    /// A turn ended (not one cut and handed to recovery): the recovery chain
    /// it ran (`recovery`) ends, then an owed continuation goes first, then
    /// the queue.
    TurnEnded { recovery: bool },
    /// A person answered a call (a tab's result or approval): the client
    /// tools the answer sent are kept, and a continuation is owed
    /// (`auto_continue`) or an owed one waits for this answer too.
    PersonAnswered {
        conn: ConnId,
        auto_continue: bool,
        client_tools: Option<Vec<ClientToolSchema>>,
    },
    /// Every tab's result waiting on `after_tool_call` has landed: turns held
    /// for them may start.
    TabResultsLanded,
}

/// What turns handed back and the core has not carried out yet, oldest first.
#[derive(Debug, Default)]
pub(in crate::core) struct HandBack {
    items: VecDeque<HandedBack>,
}

impl HandBack {
    pub(in crate::core) fn push(&mut self, item: HandedBack) {
        self.items.push_back(item);
    }

    pub(in crate::core) fn next(&mut self) -> Option<HandedBack> {
        self.items.pop_front()
    }
}

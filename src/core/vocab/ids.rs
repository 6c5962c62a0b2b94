//! Id minting behind a trait, so the host uses random ids and tests use
//! deterministic ones; the ids of connections and of
//! the core's model calls and tool runs.

use std::rc::Rc;

/// A connection id: the `_pk` the client chose (kept in the socket attachment).
pub type ConnId = Rc<str>;
/// Identifies one model call or one tool run started by the core.
pub type CallId = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// A persisted message (assistant answers).
    Message,
    /// A server-minted request id (continuations, programmatic turns).
    Request,
    /// An approval request.
    Approval,
}

pub trait IdSource {
    fn new_id(&mut self, kind: IdKind) -> String;
}

/// `msg-1`, `req-2`, `apr-3`…: readable and repeatable.
#[derive(Debug, Default)]
pub struct CountingIds {
    next: u64,
}

impl IdSource for CountingIds {
    fn new_id(&mut self, kind: IdKind) -> String {
        self.next += 1;
        let prefix = match kind {
            IdKind::Message => "msg",
            IdKind::Request => "req",
            IdKind::Approval => "apr",
        };
        format!("{prefix}-{}", self.next)
    }
}

//! The epilogue of every event and command: what turns handed back
//! (`turn/hand_back.rs`) is carried out here, in the order handed back, by
//! the folders above the turn — recovery ends a chain, admit asks for or
//! queues a continuation and its pump decides what runs next. Nothing below
//! calls up: a turn only says what happened.

use crate::core::turn::HandedBack;
use crate::core::Core;

impl Core {
    /// Carries out everything handed back, including what carrying it out
    /// hands back (a turn started by the pump that ends at once).
    pub(in crate::core) fn settle(&mut self) {
        while let Some(item) = self.handed_back.next() {
            match item {
                HandedBack::TurnEnded { recovery } => {
                    if recovery {
                        self.finish_recovery();
                    }
                    self.after_turn();
                }
                HandedBack::PersonAnswered {
                    conn,
                    auto_continue,
                    client_tools,
                } => {
                    if let Some(tools) = client_tools {
                        self.remember_client_tools(tools);
                    }
                    self.after_person_answered(conn, auto_continue);
                }
                HandedBack::TabResultsLanded => self.pump(),
            }
        }
    }
}

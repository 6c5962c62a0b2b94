//! A batch of writes the host could not commit (`Event::StoreWriteFailed`):
//! the batch was rolled back whole, so the records written before it — the
//! stream's write-ahead record and its chunk log — are still stored and the
//! next start settles the answer from them. Here the failure is made
//! visible: the turn the batch belonged to ends with an error frame on its
//! request id for every tab and a parent agent's channel (and is recorded for
//! tabs that connect later); a failed write no turn owns is told to every
//! connection. The host holds back the frames queued after the failed batch
//! and before the next write (they announced what was not stored), and the
//! refused messages go back to their stored copy in the transcript, so what
//! `get-messages` and a connecting tab are served is what is stored. A
//! batch that only wrote the synced state is the state's own business
//! (`synced_state::state`): no chat error for it.

use crate::protocol::server;

use crate::core::contract::effects::StoreOp;
use crate::core::Core;

/// The text tabs read when a write fails.
pub fn write_failed_text(error: &str) -> String {
    format!(
        "The agent could not save this answer ({error}); it was not completed. Please try again."
    )
}

impl Core {
    pub(in crate::core) fn on_store_write_failed(&mut self, ops: &[StoreOp], error: &str) {
        if self.on_state_write_failed(ops, error) {
            return;
        }
        let text = write_failed_text(error);
        for op in ops {
            if let StoreOp::PutQueuedBody { request_id, .. } = op {
                self.queue.body_not_stored(request_id);
            }
        }
        // What is served (`get-messages`, a connecting tab's transcript) is
        // what is stored: the refused messages go back to their stored copy.
        for op in ops {
            if let StoreOp::PutMessage { message, .. } = op {
                self.transcript.revert_to_stored(&message.id);
            }
        }
        let mut told = false;
        // The batch closed the last turn (its `done` frame was held back).
        if let Some(closed) = self.ended.take_closed() {
            let closes = |op: &StoreOp| matches!(op, StoreOp::CloseStream { request_id } if *request_id == closed.request_id);
            if ops.iter().any(closes) {
                let to = self.conns.chat();
                self.send_final_error(
                    to,
                    &closed.request_id,
                    &text,
                    &closed.message_ids,
                    closed.continuation,
                );
                self.record_terminal_error(
                    closed.request_id,
                    text.clone(),
                    closed.message_ids,
                    Vec::new(),
                    closed.continuation,
                );
                told = true;
            } else {
                self.ended.closed(closed);
            }
        }
        let written: Vec<&str> = ops
            .iter()
            .filter_map(|op| match op {
                StoreOp::PutMessage { message, .. } => Some(message.id.as_str()),
                _ => None,
            })
            .collect();
        let owns = |request_id: &str, answer: Option<&str>, origin: &[String]| {
            ops.iter().any(|op| match op {
                StoreOp::OpenStream(record) => record.request_id == request_id,
                StoreOp::AppendChunks { request_id: r, .. }
                | StoreOp::CloseStream { request_id: r } => r == request_id,
                _ => false,
            }) || written
                .iter()
                .any(|id| Some(*id) == answer || origin.iter().any(|o| o == id))
        };
        // Queued turns whose messages were not stored are dropped with the error.
        let refused: Vec<String> = self
            .queue
            .iter()
            .filter(|turn| owns(&turn.request_id, None, &turn.message_ids))
            .map(|turn| turn.request_id.clone())
            .collect();
        for request_id in refused {
            if let Some(turn) = self.queue.remove(&request_id) {
                let to = self.conns.chat();
                let continuation = turn.is_continuation();
                self.send_final_error(to, &request_id, &text, &turn.message_ids, continuation);
                told = true;
            }
        }
        // The batch belonged to the running turn: it ends with the error.
        let touches_active = self.active.as_ref().is_some_and(|active| {
            let turn = active.turn();
            owns(
                &turn.request_id,
                Some(&active.message().id),
                &turn.message_ids,
            )
        });
        if touches_active {
            self.end_turn(crate::protocol::Outcome::Error, Some(text.clone()));
            told = true;
        } else if told {
            self.pump();
        }
        if !told {
            let to = self.conns.all();
            self.send_to(to, server::chat_error(&text));
        }
    }
}

//! The chunks a turn streams: each is applied to the answer, given its `seq`,
//! broadcast once-serialized to every tab that is live on the stream, and
//! kept for replay; the durable chunk log is written in batches (urgent
//! chunks — the first delta, tool calls, settled tool results — at once,
//! the rest every `FlushPolicy::max_chunks` or `max_delay_ms`).

use std::rc::Rc;

use crate::protocol::{server, ResponseFrame, UIMessageChunk};

use crate::core::contract::effects::{StoreOp, Timer};
use crate::core::data::accumulator::apply_chunk;
use crate::core::Core;

/// Chunks larger than this are sent live but not logged (and get no `seq`).
const MAX_LOGGED_CHUNK: usize = 1_800_000;

impl Core {
    /// Applies, logs and broadcasts one chunk of the active stream.
    pub(in crate::core::turn) fn emit(&mut self, chunk: UIMessageChunk) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        if !apply_chunk(&mut active.message, &chunk) {
            self.apply_cross_message(&chunk);
        }
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let body: Rc<str> = Rc::from(chunk.to_json());
        let logged = body.len() <= MAX_LOGGED_CHUNK;
        let log = &mut active.log;
        let seq = logged.then_some(log.bodies.len() as u64);
        let frame = ResponseFrame {
            seq,
            continuation: active.turn.is_continuation(),
            ..ResponseFrame::new(&active.turn.request_id, &body)
        }
        .to_json();
        let first_delta = !log.saw_delta
            && matches!(
                chunk,
                UIMessageChunk::TextDelta { .. } | UIMessageChunk::ReasoningDelta { .. }
            );
        log.saw_delta |= first_delta;
        if logged {
            log.bodies.push(body);
        }
        let urgent = first_delta
            || chunk.settles_a_tool()
            || matches!(
                chunk,
                UIMessageChunk::ToolInputAvailable { .. }
                    | UIMessageChunk::ToolApprovalRequest { .. }
            );
        let unflushed = log.bodies.len() - log.flushed;
        let arm = !urgent && unflushed > 0 && !self.timers.is_armed(Timer::FlushChunks);
        // Written before the frame goes out: a tab never sees a tool call or the first words
        // that a restart would not find in the log (the runtime holds a frame sent while a
        // write is pending until it is stored).
        if urgent || unflushed >= self.config.settings.flush.max_chunks {
            self.flush_chunks();
        } else if arm {
            let at = self.now + self.config.settings.flush.max_delay_ms;
            self.set_timer(Timer::FlushChunks, at);
        }
        let to = self.conns.chat();
        self.send_to(to, frame);
    }

    /// A result for a call owned by an earlier message (an approved call run by
    /// a continuation): patch that message, persist it, tell every tab.
    fn apply_cross_message(&mut self, chunk: &UIMessageChunk) {
        let tool_call_id = match chunk {
            UIMessageChunk::ToolOutputAvailable { tool_call_id, .. }
            | UIMessageChunk::ToolOutputError { tool_call_id, .. }
            | UIMessageChunk::ToolOutputDenied { tool_call_id } => tool_call_id,
            _ => return,
        };
        let Some(entry) = self.transcript.owner_of_mut(tool_call_id) else {
            return;
        };
        let before = entry.message.clone();
        apply_chunk(&mut entry.message, chunk);
        if entry.message == before {
            return;
        }
        let entry = entry.clone();
        self.put_entry(&entry);
        let to = self.conns.all();
        self.send_list_change(to, server::message_updated(&entry.message));
    }

    /// Writes the chunks not yet durable as one row of the chunk log.
    pub(in crate::core) fn flush_chunks(&mut self) {
        self.clear_timer(Timer::FlushChunks);
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let log = &mut active.log;
        if log.flushed >= log.bodies.len() {
            return;
        }
        let bodies = log.bodies[log.flushed..].to_vec();
        let first_seq = log.flushed as u64;
        log.flushed = log.bodies.len();
        let request_id = active.turn.request_id.clone();
        self.store(StoreOp::AppendChunks {
            request_id,
            first_seq,
            bodies,
        });
    }
}

//! The resume handshake: answering a tab's probe (which stream, if any, it
//! may resume) and its ACK (replay what was streamed, then go live).

use crate::protocol::{server, ResponseFrame};

use crate::core::rows::persisted::OpenStream;
use crate::core::turn::{caught_up_frame, cut_off_frame, failed_replay_frame, late_ack_frame};
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

impl Core {
    pub(in crate::core) fn on_resume_probe(&mut self, conn: ConnId, probe_id: Option<String>) {
        let probe = probe_id.as_deref();
        if self.recovery_offer().is_some() {
            // Offered the cut stream on connect; the recovery reaches it live.
            let frame = server::stream_resume_none(Some("idle"), probe);
            self.send_to(vec![conn], frame);
            return;
        }
        if let Some(active) = &self.active {
            let owner = active.turn().requester.clone();
            let owned_elsewhere = active.turn().is_continuation()
                && owner
                    .as_ref()
                    .is_some_and(|o| *o != conn && self.conns.contains(o));
            if owned_elsewhere {
                let frame = server::stream_resume_none(Some("continuation-owned"), probe);
                self.send_to(vec![conn], frame);
                return;
            }
            let id = active.turn().request_id.clone();
            self.offer_stream(conn, &id, probe);
            return;
        }
        if let Some(orphan) = self.recovery.cut_stream() {
            let id = orphan.record.request_id.clone();
            self.offer_stream(conn, &id, probe);
            return;
        }
        if let Some(pending) = &self.continuation {
            let owned_by_other = pending.owner.as_ref().is_some_and(|o| *o != conn);
            if !owned_by_other {
                let id = pending.request_id.clone();
                self.park(conn, &id, probe);
                return;
            }
        }
        if let Some(record) = self.ended.terminal_error() {
            let frame = server::stream_resuming(&record.request_id, probe);
            self.send_to(vec![conn], frame);
            return;
        }
        if let Some(id) = self.accepted_not_streaming() {
            self.park(conn, &id, probe);
            return;
        }
        self.send_to(vec![conn], server::stream_resume_none(Some("idle"), probe));
    }

    fn offer_stream(&mut self, conn: ConnId, id: &str, probe: Option<&str>) {
        self.conns.offer_resume(&conn);
        self.send_to(vec![conn], server::stream_resuming(id, probe));
    }

    fn park(&mut self, conn: ConnId, id: &str, probe: Option<&str>) {
        self.conns.park(&conn);
        self.send_to(vec![conn], server::stream_pending(id, probe));
    }

    pub(in crate::core) fn on_resume_ack(&mut self, conn: ConnId, id: &str) {
        let was_pending = self.conns.ack_resume(&conn);
        if self.ack_cut_stream(&conn, id, was_pending) {
            return;
        }
        if let Some(active) = &self.active {
            if active.turn().request_id != id || !was_pending {
                return;
            }
            let continuation = active.turn().is_continuation();
            let caught_up = caught_up_frame(id, continuation);
            let bodies = active.chunk_bodies().iter().map(|b| &**b);
            let frames = replay_frames(id, bodies, continuation, caught_up);
            self.send_each(&conn, frames);
            return;
        }
        if let Some(orphan) = self
            .recovery
            .cut_stream()
            .filter(|o| o.record.request_id == id)
        {
            let continuation = orphan.record.continuation;
            let cut_off = cut_off_frame(id, &orphan.record.origin_message_ids, continuation);
            let frames = replay_frames(
                id,
                replayed(orphan).map(String::as_str),
                continuation,
                cut_off,
            );
            self.send_each(&conn, frames);
            return;
        }
        if let Some(record) = self.ended.terminal_error().filter(|r| r.request_id == id) {
            // The failed stream replays, then its error (kept until a new turn is accepted).
            let failed = failed_replay_frame(record);
            let chunks = record.chunks.iter().map(String::as_str);
            let frames = replay_frames(id, chunks, record.continuation, failed);
            self.send_each(&conn, frames);
            return;
        }
        let frame = late_ack_frame(id, self.ended.recently_finished(id));
        self.send_to(vec![conn], frame);
    }
}

impl Core {
    fn send_each(&mut self, conn: &ConnId, frames: Vec<String>) {
        for frame in frames {
            self.send_to(vec![conn.clone()], frame);
        }
    }
}

/// A stored chunk log replayed (`replay:true` with each chunk's `seq`), then
/// `last`, the frame that says how the replay ends.
pub(in crate::core) fn replay_frames<'a>(
    id: &str,
    bodies: impl Iterator<Item = &'a str>,
    continuation: bool,
    last: String,
) -> Vec<String> {
    let mut frames: Vec<String> = bodies
        .enumerate()
        .map(|(seq, body)| {
            ResponseFrame {
                replay: true,
                seq: Some(seq as u64),
                continuation,
                ..ResponseFrame::new(id, body)
            }
            .to_json()
        })
        .collect();
    frames.push(last);
    frames
}

/// The chunks of a cut stream a joining tab is replayed. A continuation's
/// `start` names no message, so the stock client appends its replay to the
/// answer it shows, which the transcript sent on connect already holds with
/// those chunks: such a replay carries none (its end frame still binds the
/// tab). Any other stream's replay rebuilds the answer it names from its
/// first chunk.
pub(in crate::core) fn replayed(cut: &OpenStream) -> std::slice::Iter<'_, String> {
    let chunks: &[String] = if cut.record.continuation {
        &[]
    } else {
        &cut.chunks
    };
    chunks.iter()
}

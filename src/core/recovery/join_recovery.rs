//! A tab that connects is offered what it can pick up (the cut stream a
//! recovery continues, a live stream, or a turn accepted but not streaming)
//! before or instead of the transcript, then told of a running recovery, the
//! agent's identity and state and the MCP servers' frame.
//!
//! A tab that joins while a cut turn is being recovered, as the reference
//! server treats it: it is offered the *cut* stream, not the recovery's.
//! Its ACK replays what the cut stream stored and ends it `aborted` — the
//! replayed `start` chunk names the answer's message id, so the stock client
//! rebuilds that one message — and then the recovery's chunks so far and its
//! live chunks follow as continuation frames, which the client appends to the
//! same message. (Offered the recovery's stream instead, the stock client
//! would show its resumed stream, whose `start` names no message, as a second
//! answer until the turn ends.) A cut stream that was itself a continuation
//! is replayed without its chunks: they would be appended a second time to
//! the answer the tab was sent on connect. Its probe is answered `idle`: the cut stream
//! was offered and the recovery reaches it live.

use crate::protocol::{server, ResponseFrame};

use crate::core::recovery::resume::{replay_frames, replayed};
use crate::core::rows::persisted::{OpenStream, StreamRecord};
use crate::core::turn::cut_off_frame;
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

impl Core {
    /// While a recovery turn runs, the id of the cut stream it recovers.
    pub(in crate::core::recovery) fn recovery_offer(&self) -> Option<String> {
        let active = self.active.as_ref().filter(|a| a.turn().is_recovery())?;
        let cut = self.recovery.cut_stream()?;
        (cut.record.request_id != active.turn().request_id).then(|| cut.record.request_id.clone())
    }

    /// On connect during a recovery: the cut stream is offered (live chunks
    /// are held back until the ACK), then the transcript with the stored
    /// partial and the recovering flag. Returns false when no recovery runs.
    pub(in crate::core::recovery) fn offer_cut_stream(&mut self, conn: &ConnId) -> bool {
        let Some(id) = self.recovery_offer() else {
            return false;
        };
        self.conns.offer_resume(conn);
        self.send_to(vec![conn.clone()], server::stream_resuming(&id, None));
        // Bounded as every connect transcript is (not the whole history).
        self.send_transcript(vec![conn.clone()], true);
        if let Some(root) = self.recovery.recovering() {
            let frame = server::chat_recovering(true, root);
            self.send_to(vec![conn.clone()], frame);
        }
        true
    }

    /// The ACK of the cut stream offered during a recovery. Returns false
    /// when `id` is not that stream (the ordinary handshake answers).
    pub(in crate::core::recovery) fn ack_cut_stream(
        &mut self,
        conn: &ConnId,
        id: &str,
        was_pending: bool,
    ) -> bool {
        if self.recovery_offer().as_deref() != Some(id) {
            return false;
        }
        if !was_pending {
            // Already caught up (a repeated ACK): the recovery reaches it live.
            return true;
        }
        let Some(cut) = self.recovery.cut_stream() else {
            return true;
        };
        let record = &cut.record;
        let last = cut_off_frame(id, &record.origin_message_ids, record.continuation);
        // The parts the cut left open were closed when the partial was
        // stored; the replay closes them too, so the tab's copy matches.
        let closing = closing_chunks(replayed(cut).as_slice());
        let chunks = replayed(cut).chain(&closing).map(String::as_str);
        let mut frames = replay_frames(id, chunks, record.continuation, last);
        if let Some(active) = &self.active {
            // What the recovery streamed before the tab joined, as the live
            // frames the other tabs got (same `seq`s); live frames follow.
            let recovery = active.turn().request_id.as_str();
            let continuation = active.turn().is_continuation();
            frames.extend(active.chunk_bodies().iter().enumerate().map(|(seq, body)| {
                ResponseFrame {
                    seq: Some(seq as u64),
                    continuation,
                    ..ResponseFrame::new(recovery, body)
                }
                .to_json()
            }));
        }
        for frame in frames {
            self.send_to(vec![conn.clone()], frame);
        }
        true
    }

    /// The running turn's stream as a cut stream (its model stream broke off
    /// inside the isolate), kept on offer while its recovery runs.
    pub(in crate::core::recovery) fn active_as_cut_stream(&self) -> Option<OpenStream> {
        let active = self.active.as_ref()?;
        let turn = active.turn();
        Some(OpenStream {
            record: StreamRecord {
                request_id: turn.request_id.clone(),
                message_id: active.message().id.clone(),
                continuation: turn.is_continuation(),
                origin_message_ids: turn.message_ids.clone(),
                started_at: self.now,
                recovery_root: turn.recovery_root.clone(),
            },
            chunks: active
                .chunk_bodies()
                .iter()
                .map(|b| b.to_string())
                .collect(),
        })
    }
}

impl Core {
    /// A tab's socket opened.
    pub(in crate::core) fn on_connect(&mut self, conn: ConnId) {
        self.conns.add(conn.clone());
        if self.offer_cut_stream(&conn) {
            // During a recovery: the cut stream, the transcript, the flag.
        } else if let Some(id) = self.live_stream_id() {
            // A stream is live (or cut and replayable): offer it instead of the transcript.
            self.conns.offer_resume(&conn);
            self.send_to(vec![conn.clone()], server::stream_resuming(&id, None));
            if self.recovery.recovering().is_some() {
                // During a recovery the tab also gets the transcript with the
                // stored partial (as the reference does), which replaces any
                // longer partial it kept from before the eviction; the
                // continuation it is offered then appends to the right text.
                self.send_transcript(vec![conn.clone()], true);
            }
            self.tell_recovering(&conn);
        } else {
            if let Some(id) = self.accepted_not_streaming() {
                self.conns.park(&conn);
                self.send_to(vec![conn.clone()], server::stream_pending(&id, None));
            }
            self.send_transcript(vec![conn.clone()], true);
            self.tell_recovering(&conn);
        }
        self.send_identity_and_state(&conn);
        let mcp = self.mcp_frame();
        self.send_to(vec![conn], mcp);
    }

    /// A tab that connects during a recovery learns of it (after the offer or transcript).
    fn tell_recovering(&mut self, conn: &ConnId) {
        if let Some(root) = self.recovery.recovering() {
            let frame = server::chat_recovering(true, root);
            self.send_to(vec![conn.clone()], frame);
        }
    }
}

/// `text-end` / `reasoning-end` chunks for the text and reasoning parts a
/// cut chunk log opened and never ended, in the order they were opened.
fn closing_chunks(chunks: &[String]) -> Vec<String> {
    let mut open: Vec<(String, String)> = Vec::new();
    for body in chunks {
        let Ok(chunk) = serde_json::from_str::<serde_json::Value>(body) else {
            continue;
        };
        let kind = chunk.get("type").and_then(|t| t.as_str()).unwrap_or("");
        let Some(part) = chunk.get("id").and_then(|i| i.as_str()) else {
            continue;
        };
        match kind {
            "text-start" | "reasoning-start" => {
                let end = kind.replace("-start", "-end");
                open.push((end, part.to_string()));
            }
            "text-end" | "reasoning-end" => open.retain(|(end, id)| !(end == kind && id == part)),
            _ => {}
        }
    }
    open.into_iter()
        .map(|(kind, id)| serde_json::json!({ "type": kind, "id": id }).to_string())
        .collect()
}

//! How streams end, in one place: the terminal `done` frame with its outcome
//! (and the submission the request ran, settled with it),
//! the error frame of a failed turn and its durable record (`TerminalError`,
//! replayed to reconnecting tabs until a new turn is accepted), a refused
//! frame's answer, and the frames that end a replay (a live stream caught up,
//! a cut stream ended `aborted`, a failed stream's error, a late ACK).

use crate::protocol::{server, Outcome, ResponseFrame};

use crate::core::contract::effects::StoreOp;
use crate::core::rows::persisted::{ConfigKey, SubmissionStatus, TerminalError};
use crate::core::turn::ended::Finished;
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

impl Core {
    /// The `done` frame of request `id` with its outcome.
    pub(in crate::core::turn) fn send_terminal(
        &mut self,
        to: Vec<ConnId>,
        id: &str,
        outcome: Outcome,
        message_ids: Option<&[String]>,
        continuation: bool,
    ) {
        let frame = ResponseFrame {
            done: true,
            outcome: Some(outcome),
            message_ids: message_ids.filter(|ids| !ids.is_empty()),
            continuation,
            ..ResponseFrame::new(id, "")
        }
        .to_json();
        self.send_to(to, frame);
    }

    /// The error of a failed turn, sent before its `done` frame.
    pub(in crate::core::turn) fn send_turn_error(
        &mut self,
        to: Vec<ConnId>,
        id: &str,
        text: &str,
        message_ids: &[String],
        continuation: bool,
    ) {
        let frame = ResponseFrame {
            error: true,
            continuation,
            message_ids: Some(message_ids).filter(|ids| !ids.is_empty()),
            ..ResponseFrame::new(id, text)
        }
        .to_json();
        self.send_to(to, frame);
        self.submission_error(id, text);
    }

    /// A turn that can run no more (its recovery budget is spent): the error
    /// ends its stream in one frame.
    pub(in crate::core) fn send_final_error(
        &mut self,
        to: Vec<ConnId>,
        id: &str,
        text: &str,
        message_ids: &[String],
        continuation: bool,
    ) {
        self.send_to(to, failed_frame(id, text, message_ids, continuation));
        self.submission_error(id, text);
        self.submission_ended(id, Outcome::Error);
    }

    /// Refuses a frame: on its request id (the tab's stream ends with the
    /// error) or, without one, with a `cf_agent_chat_error` frame. Nothing is stored.
    pub(crate) fn reject(&mut self, conn: ConnId, id: Option<String>, error: &str) {
        self.log(crate::core::contract::log_event::LogEvent::FrameRefused {
            conn: conn.clone(),
            reason: error.to_string(),
        });
        let frame = match id {
            // An over-long id is not echoed (the refusal would amplify it).
            Some(id) if !id.is_empty() && id.len() <= crate::protocol::client::MAX_ID_BYTES => {
                ResponseFrame {
                    done: true,
                    error: true,
                    ..ResponseFrame::new(&id, error)
                }
                .to_json()
            }
            _ => server::chat_error(error),
        };
        self.send_to(vec![conn], frame);
    }

    /// Writes down the failed turn so tabs that connect later are told.
    pub(in crate::core) fn record_terminal_error(
        &mut self,
        request_id: String,
        text: String,
        message_ids: Vec<String>,
        chunks: Vec<String>,
        continuation: bool,
    ) {
        let record = TerminalError {
            request_id,
            text,
            message_ids,
            chunks,
            continuation,
        };
        self.put_config(ConfigKey::TerminalError, &record);
        self.ended.record_terminal_error(record);
    }

    /// A new turn was accepted: the last failure is no longer replayed.
    pub(in crate::core) fn forget_terminal_error(&mut self) {
        if self.ended.forget_terminal_error() {
            self.store(StoreOp::DeleteConfig {
                key: ConfigKey::TerminalError,
            });
        }
    }
}

/// The end of a replay of the live stream: the tab has caught up.
pub(in crate::core) fn caught_up_frame(id: &str, continuation: bool) -> String {
    ResponseFrame {
        replay: true,
        replay_complete: true,
        continuation,
        ..ResponseFrame::new(id, "")
    }
    .to_json()
}

/// The end of a replay of a stream cut by an eviction.
pub(in crate::core) fn cut_off_frame(
    id: &str,
    message_ids: &[String],
    continuation: bool,
) -> String {
    ResponseFrame {
        done: true,
        replay: true,
        outcome: Some(Outcome::Aborted),
        continuation,
        message_ids: Some(message_ids).filter(|m| !m.is_empty()),
        ..ResponseFrame::new(id, "")
    }
    .to_json()
}

/// The end of a replay of a failed stream: its error.
pub(in crate::core) fn failed_replay_frame(record: &TerminalError) -> String {
    failed_frame(
        &record.request_id,
        &record.text,
        &record.message_ids,
        record.continuation,
    )
}

/// An ACK for a stream that already ended: nothing to replay. It says how
/// the stream ended unless it completed (an absent outcome reads as
/// `completed`): a stream cut by an eviction says `aborted`.
pub(in crate::core) fn late_ack_frame(id: &str, finished: Option<&Finished>) -> String {
    ResponseFrame {
        done: true,
        replay: true,
        outcome: finished
            .map(|f| f.outcome)
            .filter(|o| *o != Outcome::Completed),
        message_ids: finished
            .map(|f| f.message_ids.as_slice())
            .filter(|m| !m.is_empty()),
        ..ResponseFrame::new(id, "")
    }
    .to_json()
}

fn failed_frame(id: &str, text: &str, message_ids: &[String], continuation: bool) -> String {
    ResponseFrame {
        done: true,
        error: true,
        continuation,
        message_ids: Some(message_ids).filter(|m| !m.is_empty()),
        ..ResponseFrame::new(id, text)
    }
    .to_json()
}

impl Core {
    /// Request `id` ended with `outcome`: its terminal frame goes to `to`,
    /// and a submission it ran is settled.
    pub(in crate::core) fn request_ended(
        &mut self,
        to: Vec<ConnId>,
        id: &str,
        outcome: Outcome,
        message_ids: Option<&[String]>,
        continuation: bool,
    ) {
        self.send_terminal(to, id, outcome, message_ids, continuation);
        self.submission_ended(id, outcome);
    }

    /// A turn's stream ended with `outcome` (`send_terminal`): a submission
    /// it ran has ended too, unless a recovery turn carries it on.
    pub(in crate::core::turn) fn submission_ended(&mut self, request_id: &str, outcome: Outcome) {
        let status = match outcome {
            Outcome::Completed => SubmissionStatus::Completed,
            Outcome::Error => SubmissionStatus::Failed,
            Outcome::Aborted => SubmissionStatus::Cancelled,
            Outcome::Skipped => SubmissionStatus::Skipped,
            Outcome::Recovering => return,
        };
        let Some(id) = self.submissions.live_id_for_request(request_id) else {
            return;
        };
        self.settle_submission(&id, status, None);
    }

    /// The error text of a failing turn, kept for its submission.
    pub(in crate::core::turn) fn submission_error(&mut self, request_id: &str, text: &str) {
        self.submissions.note_error(request_id, text);
    }

    /// Writes submission `id`'s final status (with an error text, or the
    /// one its failing turn reported).
    pub(in crate::core) fn settle_submission(
        &mut self,
        id: &str,
        status: SubmissionStatus,
        error: Option<&str>,
    ) {
        let transcript = &self.transcript;
        let answered = |answer: &str| transcript.get(answer).is_some();
        let settled = self
            .submissions
            .settle(id, status, error, answered, self.now);
        if let Some(record) = settled {
            self.store(StoreOp::PutSubmission(record));
        }
    }
}

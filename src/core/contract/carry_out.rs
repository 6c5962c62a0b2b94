//! How a host carries out a core's effects, in order: a run of consecutive
//! writes is committed as one transaction; when a run is refused (rolled
//! back whole), the frames queued after it, up to the next write, are held
//! back (they announce what was not stored, as does an `on_state_changed`
//! call among them), and the refused writes are
//! returned for `Event::StoreWriteFailed`. The Durable Object host and the
//! native simulation both go through this one function.

use crate::core::contract::author_calls::AuthorCall;
use crate::core::contract::effects::{Effect, StoreOp};

/// One thing for the host to do.
pub enum Step {
    /// Commit these writes together, or refuse them all: `Err` gives them
    /// back with the reason.
    Write(Vec<StoreOp>),
    /// Carry out any other effect (a frame that is not held back included).
    Do(Effect),
}

/// Writes refused, in order, with the first reason.
pub type Refused = (Vec<StoreOp>, String);

/// Carries out `effects` through `step` (see the module header); returns the
/// writes refused, if any, for the core to be told once all ran.
pub fn carry_out(
    effects: Vec<Effect>,
    mut step: impl FnMut(Step) -> Result<(), Refused>,
) -> Option<Refused> {
    let mut effects = effects.into_iter().peekable();
    let mut refused: Option<Refused> = None;
    let mut hold_frames = false;
    while let Some(effect) = effects.next() {
        match effect {
            Effect::Send { .. } | Effect::SendTranscript { .. } if hold_frames => {}
            // `on_state_changed` of a change whose write was refused.
            Effect::Author(AuthorCall::StateChanged { .. }) if hold_frames => {}
            Effect::Store(op) => {
                let mut ops = vec![op];
                while let Some(Effect::Store(_)) = effects.peek() {
                    if let Some(Effect::Store(op)) = effects.next() {
                        ops.push(op);
                    }
                }
                hold_frames = false;
                if let Err((ops, error)) = step(Step::Write(ops)) {
                    hold_frames = true;
                    match refused.as_mut() {
                        Some((all, _)) => all.extend(ops),
                        None => refused = Some((ops, error)),
                    }
                }
            }
            effect => {
                let _ = step(Step::Do(effect));
            }
        }
    }
    refused
}

//! Code waiting for a submission to be final
//! (`AgentHandle::wait_for_submission`): each wait is woken once the core
//! holds its submission as final, or no longer knows it. A host checks
//! after carrying out each event's effects.

use std::cell::RefCell;

use futures::channel::oneshot;
use futures::future::LocalBoxFuture;

use crate::core::Core;

/// The waits in memory (an eviction ends them; the submission is durable).
#[derive(Default)]
pub(crate) struct SettledWaiters(RefCell<Vec<(String, oneshot::Sender<()>)>>);

impl SettledWaiters {
    /// Resolves the next time submission `id` may have become final.
    pub fn wait(&self, id: &str) -> LocalBoxFuture<'static, ()> {
        let (wake, woken) = oneshot::channel();
        self.0.borrow_mut().push((id.to_string(), wake));
        Box::pin(async move {
            let _ = woken.await;
        })
    }

    /// Wakes the waits whose submission is final (or forgotten) in `core`;
    /// each reads the status itself.
    pub fn wake(&self, core: &RefCell<Core>) {
        let waiting = std::mem::take(&mut *self.0.borrow_mut());
        if waiting.is_empty() {
            return;
        }
        let (done, still): (Vec<_>, Vec<_>) = {
            let core = core.borrow();
            waiting
                .into_iter()
                .partition(|(id, _)| core.submission(id).is_none_or(|r| r.status.is_final()))
        };
        self.0.borrow_mut().extend(still);
        for (_, wake) in done {
            let _ = wake.send(());
        }
    }
}

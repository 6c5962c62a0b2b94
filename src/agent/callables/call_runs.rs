//! The callable runs in flight, by connection and call id, for a host: a
//! run starts from the core's `AuthorCall::RunCallable` (the method, or the
//! caller's error when there is no such method or its connection is gone),
//! sends a streaming method's chunks through the core, stays abortable until
//! the core cancels it, and hands its result back when it ends.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::rc::Rc;

use futures::future::{abortable, AbortHandle};
use serde_json::Value;

use crate::core::ConnId;

use crate::agent::callables::{CallContext, CallStream, Callable};
use crate::agent::handle::AgentHandle;

type Runs = Rc<RefCell<HashMap<(ConnId, String), AbortHandle>>>;

/// The runs in flight (clones share them).
#[derive(Clone, Default)]
pub(crate) struct CallRuns(Runs);

impl CallRuns {
    /// Starts call `id` of `conn` to `method`: `ctx` is `None` when the
    /// connection is gone. Resolves with the call's result, or `None` when
    /// the core cancelled it (it already forgot the call).
    pub fn start(
        &self,
        callables: &HashMap<String, Callable>,
        (conn, id): (&ConnId, &str),
        (method, args): (&str, Value),
        ctx: Option<CallContext>,
    ) -> impl Future<Output = Option<Result<Value, String>>> + 'static {
        let run = match (callables.get(method), ctx) {
            (Some(callable), Some(ctx)) => {
                let stream = call_stream(&ctx.agent, conn, id);
                callable.stream_with(args, ctx, stream)
            }
            (None, _) => {
                let error = format!("Method {method} does not exist");
                Box::pin(async move { Err(error) })
            }
            (_, None) => Box::pin(async { Err("Connection closed".to_string()) }),
        };
        let (run, abort) = abortable(run);
        let key = (conn.clone(), id.to_string());
        self.0.borrow_mut().insert(key.clone(), abort);
        let runs = self.0.clone();
        async move {
            let outcome = run.await;
            runs.borrow_mut().remove(&key);
            outcome.ok()
        }
    }

    /// Aborts the runs of calls `ids` of `conn` (the core cancelled them).
    pub fn cancel(&self, conn: &ConnId, ids: Vec<String>) {
        for id in ids {
            let run = self.0.borrow_mut().remove(&(conn.clone(), id));
            if let Some(abort) = run {
                abort.abort();
            }
        }
    }
}

/// The stream a call's method sends its chunks through: each goes through
/// the core, which sends it while the call streams.
fn call_stream(agent: &AgentHandle, conn: &ConnId, id: &str) -> CallStream {
    let (agent, conn, id) = (agent.clone(), conn.clone(), id.to_string());
    CallStream::new(move |chunk| {
        agent.with_core(|core, _| core.send_call_chunk(&conn, &id, &chunk))
    })
}

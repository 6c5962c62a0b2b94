//! Carries out what the core asks of the author's code for the agent as a
//! whole (`AuthorCall`): a callable run for a connection (its outcome fed
//! back as `Event::CallableDone`; a streaming one's chunks through
//! `Core::send_call_chunk`, and the run abortable until the core cancels
//! it), `on_state_changed`, and `on_message` for frames of the author's own
//! types. Each is awaited off the event that asked for it.

use std::rc::Rc;

use futures::future::abortable;
use wasm_bindgen_futures::spawn_local;

use crate::core::{AuthorCall, ConnId, Event};

use super::super::callable::{CallContext, CallStream};
use super::super::connection::Connection;
use super::AgentHost;

impl AgentHost {
    /// The stream a call's method sends its chunks through: each goes
    /// through the core, which sends it while the call streams.
    fn call_stream(self: &Rc<Self>, conn: &ConnId, id: &str) -> CallStream {
        let handle = self.handle();
        let (conn, id) = (conn.clone(), id.to_string());
        CallStream::new(move |chunk| {
            handle.with_core(|core, _| core.send_call_chunk(&conn, &id, &chunk))
        })
    }

    pub(super) fn run_author_call(self: &Rc<Self>, call: AuthorCall) {
        match call {
            AuthorCall::RunCallable {
                conn,
                id,
                method,
                args,
            } => {
                let socket = self.sockets.borrow().get(&conn).cloned();
                let callable = self.author.callables.get(&method).cloned();
                let run = match (callable, socket) {
                    (Some(callable), Some(ws)) => {
                        let ctx = CallContext {
                            connection: Connection::new(&conn, ws),
                            agent: self.handle(),
                        };
                        let stream = self.call_stream(&conn, &id);
                        callable.stream_with(args, ctx, stream)
                    }
                    (None, _) => {
                        let error = format!("Method {method} does not exist");
                        Box::pin(async move { Err(error) })
                    }
                    (_, None) => Box::pin(async { Err("Connection closed".to_string()) }),
                };
                let (run, abort) = abortable(run);
                let key = (conn.clone(), id.clone());
                self.call_runs.borrow_mut().insert(key.clone(), abort);
                let host = self.clone();
                spawn_local(async move {
                    let outcome = run.await;
                    host.call_runs.borrow_mut().remove(&key);
                    // `Err(Aborted)`: cancelled; the core already forgot it.
                    if let Ok(result) = outcome {
                        host.dispatch(Event::CallableDone { conn, id, result });
                    }
                });
            }
            AuthorCall::CancelCalls { conn, ids } => {
                for id in ids {
                    if let Some(abort) = self.call_runs.borrow_mut().remove(&(conn.clone(), id)) {
                        abort.abort();
                    }
                }
            }
            AuthorCall::StateChanged { state, source } => {
                spawn_local((self.author.on_state_changed)(
                    (state, source),
                    self.handle(),
                ));
            }
            AuthorCall::OtherFrame { conn, text } => {
                let Some(ws) = self.sockets.borrow().get(&conn).cloned() else {
                    return;
                };
                let connection = Connection::new(&conn, ws);
                spawn_local((self.author.on_message)((connection, text), self.handle()));
            }
        }
    }
}

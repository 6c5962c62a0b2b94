//! Carries out what the core asks of the author's code for the agent as a
//! whole (`AuthorCall`): a callable run for a connection (its outcome fed
//! back as `Event::CallableDone`; a streaming one's chunks through
//! `Core::send_call_chunk`, and the run abortable until the core cancels
//! it), `on_state_changed`, and `on_message` for frames of the author's own
//! types. Each is awaited off the event that asked for it.

use std::rc::Rc;

use wasm_bindgen_futures::spawn_local;

use crate::core::{AuthorCall, Event};

use super::AgentHost;
use crate::agent::callables::CallContext;

impl AgentHost {
    pub(super) fn carry_out_author_call(self: &Rc<Self>, call: AuthorCall) {
        match call {
            AuthorCall::RunCallable {
                conn,
                id,
                method,
                args,
            } => {
                let socket = self.sockets.borrow().get(&conn).cloned();
                let ctx = socket.map(|ws| CallContext {
                    connection: self.connection_on(&conn, ws),
                    agent: self.handle(),
                });
                let callables = &self.author.callables;
                let run = (self.call_runs).start(callables, (&conn, &id), (&method, args), ctx);
                let host = self.clone();
                spawn_local(async move {
                    // `None`: cancelled; the core already forgot it.
                    if let Some(result) = run.await {
                        host.dispatch(Event::CallableDone { conn, id, result });
                    }
                });
            }
            AuthorCall::CancelCalls { conn, ids } => self.call_runs.cancel(&conn, ids),
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
                let connection = self.connection_on(&conn, ws);
                spawn_local((self.author.on_message)((connection, text), self.handle()));
            }
        }
    }
}

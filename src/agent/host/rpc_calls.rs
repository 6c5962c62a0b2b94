//! The host's side of calls that arrive over Durable Object RPC instead of a
//! socket: each `chat()` call is an in-isolate connection of the core (the
//! same connection a parent's WebSocket channel is), whose frames go to the
//! call's queue instead of a socket; and callers waiting for a turn's end
//! (`continueLastTurn`) are told when the core reports it; the author's own
//! RPC methods, by name.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use futures::channel::{mpsc, oneshot};

use crate::core::{ChatResponse, ConnId, Event};

use super::AgentHost;
use crate::agent::ids::random_token;

/// The RPC calls in flight on one agent.
#[derive(Default)]
pub(super) struct RpcCalls {
    /// Where the frames the core sends to a call's connection go.
    sinks: RefCell<HashMap<ConnId, mpsc::UnboundedSender<String>>>,
    /// The connection of each running `chat()` call, by its turn's request id.
    by_request: RefCell<HashMap<String, ConnId>>,
    /// Callers waiting for the end of a turn, by its request id.
    turn_waiters: RefCell<HashMap<String, Vec<oneshot::Sender<ChatResponse>>>>,
}

impl RpcCalls {
    /// Hands `frame` to the call behind `conn`; false when `conn` is not one.
    pub(super) fn deliver(&self, conn: &ConnId, frame: &str) -> bool {
        match self.sinks.borrow().get(conn) {
            Some(sink) => {
                let _ = sink.unbounded_send(frame.to_string());
                true
            }
            None => false,
        }
    }

    pub(super) fn is_call(&self, conn: &ConnId) -> bool {
        self.sinks.borrow().contains_key(conn)
    }

    /// A turn ended: its waiters are told.
    pub(super) fn turn_ended(&self, response: &ChatResponse) {
        let waiters = self.turn_waiters.borrow_mut().remove(&response.request_id);
        for waiter in waiters.into_iter().flatten() {
            let _ = waiter.send(response.clone());
        }
    }
}

impl AgentHost {
    /// An RPC call names no path: the agent learns its name from its
    /// Durable Object id when the caller made it from one (`getByName`,
    /// `idFromName`), as a request's path would tell it.
    pub(crate) fn learn_name_from_id(self: &Rc<Self>) {
        let name = self.state.id().name();
        if let Some(name) = name.filter(|n| crate::routing::check_agent_name(n).is_ok()) {
            self.remember_name(&name);
        }
    }

    /// Opens the in-isolate connection of one RPC `chat()` call: the core
    /// knows it as it knows a parent's channel; the frames it sends there
    /// arrive on the returned queue. Its turn is `depth` delegated calls
    /// deep (what the parent said; 0 when it said nothing): the core keeps
    /// that with the turn, so it holds when the turn waits or is cut.
    pub(crate) fn open_rpc_call(
        self: &Rc<Self>,
        depth: u32,
    ) -> (ConnId, mpsc::UnboundedReceiver<String>) {
        let (sink, frames) = mpsc::unbounded();
        let conn: ConnId = Rc::from(format!("rpc:{}", random_token(16)));
        self.rpc.sinks.borrow_mut().insert(conn.clone(), sink);
        self.dispatch(Event::Adopted {
            conn: conn.clone(),
            list_matches: false,
        });
        self.core.borrow_mut().set_delegation_depth(&conn, depth);
        (conn, frames)
    }

    /// A frame from the call, in the channel's protocol (held to its limits).
    pub(crate) fn rpc_frame(self: &Rc<Self>, conn: &ConnId, text: String) {
        self.dispatch(Event::ChannelFrame {
            conn: conn.clone(),
            text,
        });
    }

    /// The call's turn got its request id (for `cancelChat`).
    pub(crate) fn rpc_call_started(&self, conn: &ConnId, request_id: &str) {
        self.rpc
            .by_request
            .borrow_mut()
            .insert(request_id.to_string(), conn.clone());
    }

    /// The call returned: its connection goes, as a closed channel would (a
    /// client tool call still waiting on it ends as a tool error).
    pub(crate) fn close_rpc_call(self: &Rc<Self>, conn: &ConnId) {
        self.rpc.sinks.borrow_mut().remove(conn);
        self.rpc.by_request.borrow_mut().retain(|_, c| c != conn);
        self.dispatch(Event::Disconnected { conn: conn.clone() });
    }

    /// The connection of the running `chat()` call whose turn is `request_id`.
    pub(crate) fn rpc_call_of(&self, request_id: &str) -> Option<ConnId> {
        self.rpc.by_request.borrow().get(request_id).cloned()
    }

    /// Resolves when turn `request_id` ends (dropped with the agent).
    pub(crate) fn wait_for_turn(&self, request_id: &str) -> oneshot::Receiver<ChatResponse> {
        let (tx, rx) = oneshot::channel();
        self.rpc
            .turn_waiters
            .borrow_mut()
            .entry(request_id.to_string())
            .or_default()
            .push(tx);
        rx
    }

    /// Starts the author's RPC method `name` with `args` (`None`: no such
    /// method).
    pub(crate) fn call_author_rpc(
        self: &Rc<Self>,
        name: &str,
        args: serde_json::Value,
    ) -> Option<crate::agent::callables::CallFuture> {
        crate::agent::callables::rpc_methods::call(
            &self.author.rpc_methods,
            name,
            args,
            self.handle(),
        )
    }
}

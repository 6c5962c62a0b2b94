//! The definition's hooks for the agent as a whole, type-erased for the
//! host: the synced state's initial value and validator (handed to the
//! core), `on_state_changed`, the callables by name, the author's RPC
//! methods by name (`callables/rpc_methods.rs`), and the connection hooks
//! (`connection_tags`, `should_connection_be_readonly`, `on_connect`,
//! `on_close`, `on_message`).

use std::collections::HashMap;
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use serde_json::Value;

use crate::core::{AgentApi, CallableSpec, StateSource};

use crate::agent::access::RequestInfo;
use crate::agent::callables::Callable;
use crate::agent::connections::Connection;
use crate::agent::definition::AgentDefinition;
use crate::agent::handle::AgentHandle;

type Hook<A> = Rc<dyn Fn(A, AgentHandle) -> LocalBoxFuture<'static, ()>>;
/// A connection's tags or readonly flag, chosen when it connects (its id
/// and its upgrade request).
type ConnectDecision<T> = Rc<dyn Fn(&str, &RequestInfo) -> T>;

pub struct AuthorHooks {
    pub callables: HashMap<String, Callable>,
    /// Reached over Durable Object RPC (`rpc_methods` and the callables
    /// marked `.over_rpc()`).
    pub rpc_methods: HashMap<String, Callable>,
    /// Why a declared RPC method was skipped (logged when the agent starts).
    pub refused_rpc_methods: Vec<String>,
    pub on_state_changed: Hook<(Rc<Value>, StateSource)>,
    pub on_connect: Hook<(Connection, RequestInfo)>,
    pub on_close: Hook<Connection>,
    pub on_message: Hook<(Connection, String)>,
    /// `connection_tags`, checked (see `connection::checked_tags`).
    pub connection_tags: ConnectDecision<Vec<String>>,
    pub should_connection_be_readonly: ConnectDecision<bool>,
}

impl AuthorHooks {
    pub fn of<D: AgentDefinition>(definition: &Rc<D>) -> AuthorHooks {
        let callables = definition
            .callables()
            .into_iter()
            .map(|c| (c.name().to_string(), c))
            .collect();
        let mut refused_rpc_methods = Vec::new();
        let rpc_methods = crate::agent::callables::rpc_methods::author_rpc_methods(
            definition.rpc_methods(),
            &callables,
            &mut refused_rpc_methods,
        );
        let d = definition.clone();
        let on_state_changed: Hook<(Rc<Value>, StateSource)> =
            Rc::new(move |(state, source), agent| {
                let d = d.clone();
                Box::pin(async move { d.on_state_changed(state, source, agent).await })
            });
        let d = definition.clone();
        let on_connect: Hook<(Connection, RequestInfo)> = Rc::new(move |(conn, req), agent| {
            let d = d.clone();
            Box::pin(async move { d.on_connect(conn, req, agent).await })
        });
        let d = definition.clone();
        let on_close: Hook<Connection> = Rc::new(move |conn, agent| {
            let d = d.clone();
            Box::pin(async move { d.on_close(conn, agent).await })
        });
        let d = definition.clone();
        let on_message: Hook<(Connection, String)> = Rc::new(move |(conn, text), agent| {
            let d = d.clone();
            Box::pin(async move { d.on_message(conn, text, agent).await })
        });
        let d = definition.clone();
        let connection_tags: ConnectDecision<Vec<String>> =
            Rc::new(move |id, request| d.connection_tags(id, request));
        let d = definition.clone();
        let should_connection_be_readonly: ConnectDecision<bool> =
            Rc::new(move |id, request| d.should_connection_be_readonly(id, request));
        AuthorHooks {
            connection_tags,
            should_connection_be_readonly,
            callables,
            rpc_methods,
            refused_rpc_methods,
            on_state_changed,
            on_connect,
            on_close,
            on_message,
        }
    }

    /// The callables as the core sees them, by name.
    fn callable_specs(&self) -> Vec<CallableSpec> {
        let mut specs: Vec<CallableSpec> = (self.callables.values())
            .map(|c| c.spec().clone())
            .collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        specs
    }

    /// What the core needs of them: the initial state, the validator, the
    /// callables' specs.
    pub fn agent_api<D: AgentDefinition>(&self, definition: &Rc<D>) -> AgentApi {
        let validator = definition.clone();
        AgentApi {
            initial_state: definition.initial_state(),
            validate_state: Some(Rc::new(move |next: &Value, source: &StateSource| {
                validator.validate_state(next, source)
            })),
            callables: self.callable_specs(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::callables::CallStream;

    struct WithMethods;

    impl AgentDefinition for WithMethods {
        fn callables(&self) -> Vec<Callable> {
            vec![
                Callable::new("rename", |(_name,): (String,)| async {
                    Ok::<_, String>(())
                })
                .description("Renames the chat")
                .over_rpc(),
                Callable::streaming("ticks", |(): (), _stream: CallStream| async {
                    Ok::<_, String>(())
                }),
                Callable::new("peek", |(): ()| async { Ok::<_, String>(1) }).readonly_safe(),
            ]
        }
    }

    #[test]
    fn each_callable_reaches_the_core_as_one_spec_with_its_flags() {
        let definition = Rc::new(WithMethods);
        let api = AuthorHooks::of(&definition).agent_api(&definition);
        assert_eq!(
            api.callables,
            vec![
                CallableSpec::new("peek").readonly_safe(),
                CallableSpec::new("rename")
                    .description("Renames the chat")
                    .over_rpc(),
                CallableSpec::new("ticks").streaming(),
            ]
        );
        assert_eq!(api.callable("ticks").map(|c| c.streaming), Some(true));
        assert!(api.callable("missing").is_none());
    }
}

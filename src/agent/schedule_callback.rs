//! The callbacks an agent's schedules run, registered on the definition by
//! name (`AgentDefinition::schedule_callbacks`): a typed payload (read
//! through serde from the schedule's JSON) and the agent's handle, so a
//! callback reaches storage, schedules and turns like a route does.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::handle::AgentHandle;

type CallbackFuture = Pin<Box<dyn Future<Output = ()>>>;

/// A named schedule callback.
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
#[derive(Clone)]
pub struct ScheduleCallback {
    pub(crate) name: String,
    run: Rc<dyn Fn(Value, AgentHandle) -> Result<CallbackFuture, String>>,
}

impl ScheduleCallback {
    /// `run` is called with the schedule's payload read as `P` (use
    /// `serde_json::Value` for any) whenever a schedule naming `name` is due.
    pub fn new<P, F, Fut>(name: impl Into<String>, run: F) -> ScheduleCallback
    where
        P: DeserializeOwned + 'static,
        F: Fn(P, AgentHandle) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        ScheduleCallback {
            name: name.into(),
            run: Rc::new(move |payload, agent| {
                let payload: P = serde_json::from_value(payload).map_err(|e| e.to_string())?;
                Ok(Box::pin(run(payload, agent)) as CallbackFuture)
            }),
        }
    }

    /// The run, or why the payload does not fit the callback's type.
    #[cfg_attr(
        not(any(target_arch = "wasm32", feature = "test-kit")),
        allow(dead_code)
    )]
    pub(crate) fn start(
        &self,
        payload: Value,
        agent: AgentHandle,
    ) -> Result<CallbackFuture, String> {
        (self.run)(payload, agent)
    }
}

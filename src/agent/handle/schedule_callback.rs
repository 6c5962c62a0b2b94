//! The callbacks an agent's schedules run, registered on the definition by
//! name (`AgentDefinition::schedule_callbacks`): a typed payload (read
//! through serde from the schedule's JSON) and the agent's handle, so a
//! callback reaches storage, schedules and turns like a route does; or,
//! registered `with_context`, a [`ScheduleContext`] that also says which
//! schedule is running and which attempt of the run this is. A callback
//! returns `()` or a `Result`; an `Err` (and a run cut by an eviction) is
//! tried again, up to three attempts in all.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::agent::handle::AgentHandle;

type CallbackFuture = Pin<Box<dyn Future<Output = Result<(), String>>>>;

/// What a schedule callback may return: `()` (it always succeeds) or a
/// `Result` whose error is shown in the log and makes the run try again.
pub trait ScheduleResult {
    /// `Err` with the error's text when the run failed.
    fn into_result(self) -> Result<(), String>;
}

impl ScheduleResult for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: std::fmt::Display> ScheduleResult for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// What a callback registered `with_context` is told about its run.
#[derive(Clone)]
pub struct ScheduleContext {
    /// The agent, as a route reaches it.
    pub agent: AgentHandle,
    /// The name of the schedule that is due.
    pub schedule: String,
    /// Which try of this run it is: 1 for the first, more for a run started
    /// again because an eviction cut it or it returned `Err` (the number is
    /// stored with the run, so it counts across restarts).
    pub attempt: u32,
}

impl std::fmt::Debug for ScheduleContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduleContext")
            .field("schedule", &self.schedule)
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

/// A named schedule callback.
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
#[derive(Clone)]
pub struct ScheduleCallback {
    pub(crate) name: String,
    run: Rc<dyn Fn(Value, ScheduleContext) -> Result<CallbackFuture, String>>,
}

impl ScheduleCallback {
    /// `run` is called with the schedule's payload read as `P` (use
    /// `serde_json::Value` for any) whenever a schedule naming `name` is due.
    pub fn new<P, F, Fut>(name: impl Into<String>, run: F) -> ScheduleCallback
    where
        P: DeserializeOwned + 'static,
        F: Fn(P, AgentHandle) -> Fut + 'static,
        Fut: Future + 'static,
        Fut::Output: ScheduleResult,
    {
        Self::with_context(name, move |payload: P, ctx: ScheduleContext| {
            run(payload, ctx.agent)
        })
    }

    /// As [`ScheduleCallback::new`], the callback given the run's
    /// [`ScheduleContext`] (the agent, the schedule's name, the attempt).
    pub fn with_context<P, F, Fut>(name: impl Into<String>, run: F) -> ScheduleCallback
    where
        P: DeserializeOwned + 'static,
        F: Fn(P, ScheduleContext) -> Fut + 'static,
        Fut: Future + 'static,
        Fut::Output: ScheduleResult,
    {
        ScheduleCallback {
            name: name.into(),
            run: Rc::new(move |payload, ctx| {
                let payload: P = serde_json::from_value(payload).map_err(|e| e.to_string())?;
                let running = run(payload, ctx);
                Ok(Box::pin(async move { running.await.into_result() }) as CallbackFuture)
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
        ctx: ScheduleContext,
    ) -> Result<CallbackFuture, String> {
        (self.run)(payload, ctx)
    }
}

/// Starts the callback named `callback` of those a definition registers,
/// for the run `attempt` of schedule `name`: `Err` when no callback has
/// that name or the payload does not fit its type.
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) fn start_registered(
    callbacks: &HashMap<String, ScheduleCallback>,
    (name, callback): (&str, &str),
    (payload, attempt): (Value, u32),
    agent: AgentHandle,
) -> Result<CallbackFuture, String> {
    let ctx = ScheduleContext {
        agent,
        schedule: name.to_string(),
        attempt,
    };
    match callbacks.get(callback) {
        Some(registered) => registered.start(payload, ctx),
        None => Err(format!("no schedule callback `{callback}` is registered")),
    }
}

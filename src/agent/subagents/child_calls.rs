//! How many calls to child agents (a sub-agent `chat()`, an `AgentStub`
//! submission or continuation) an agent has in flight, per turn and in
//! all, held under `Limits::max_child_calls_per_turn` and
//! `max_child_calls_per_agent`. A call over a cap is refused at once with a
//! text the calling tool returns as its error (the model reads it; the turn
//! goes on); nothing waits for a slot.
//!
//! The host runs each server tool (and the author's routes, alarm and
//! schedules) inside a [`ChildCallScope`]: while its future is polled, the
//! scope is the isolate's current one, so a child call made anywhere in
//! that future finds its agent and turn without being handed them. The
//! call takes a [`ChildCallSlot`] when it is made, and dropping the slot
//! (the call returned, failed, was cancelled or its future was dropped)
//! gives it back. A call made outside any scope (the worker's own fetch
//! handler, a task spawned away from its tool) is not counted.
//!
//! A scope also knows how many delegated calls deep its turn is (a turn a
//! parent's `chat()` started is at the parent's depth plus one); a turn at
//! `Limits::max_delegation_depth` makes no further child call, so agents
//! that list each other (or a class that lists itself) cannot fan out
//! without end. The depth a call carries to its child is the scope's plus
//! one ([`ChildCallSlot::child_depth`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// The caps (0: no cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChildCallLimits {
    /// Child calls one turn's tools may have in flight together.
    pub per_turn: usize,
    /// Child calls the whole agent may have in flight together.
    pub per_agent: usize,
    /// The delegation depth past which a turn calls no child.
    pub max_depth: usize,
}

#[derive(Default)]
struct InFlight {
    total: usize,
    by_turn: HashMap<Rc<str>, usize>,
}

/// One agent's child calls in flight.
#[derive(Default)]
pub struct ChildCalls {
    limits: ChildCallLimits,
    in_flight: RefCell<InFlight>,
}

impl ChildCalls {
    pub fn new(limits: ChildCallLimits) -> Rc<ChildCalls> {
        Rc::new(ChildCalls {
            limits,
            in_flight: RefCell::default(),
        })
    }

    /// Calls in flight: in all, and for turn `turn`.
    pub fn in_flight(&self, turn: Option<&str>) -> (usize, usize) {
        let in_flight = self.in_flight.borrow();
        let of_turn = turn.and_then(|t| in_flight.by_turn.get(t)).copied();
        (in_flight.total, of_turn.unwrap_or(0))
    }
}

/// Where a child call is made from: an agent, and the request id of the
/// turn whose tool makes it (`None`: the agent's own code outside a turn).
#[derive(Clone)]
pub struct ChildCallScope {
    calls: Rc<ChildCalls>,
    turn: Option<Rc<str>>,
    /// Delegated calls between a person (or the agent's own code) and this turn.
    depth: u32,
}

impl ChildCallScope {
    pub fn new(calls: Rc<ChildCalls>, turn: Option<&str>) -> ChildCallScope {
        ChildCallScope {
            calls,
            turn: turn.map(Rc::from),
            depth: 0,
        }
    }

    /// The scope of a turn `depth` delegated calls deep.
    pub fn at_depth(self, depth: u32) -> ChildCallScope {
        ChildCallScope { depth, ..self }
    }

    /// How many delegated calls deep this scope's turn is.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Takes a slot for one child call, or says why none is left.
    pub fn acquire(&self) -> Result<ChildCallSlot, String> {
        let limits = self.calls.limits;
        if let Some(refusal) =
            crate::core::vocab::limits::delegation_refusal(self.depth, limits.max_depth)
        {
            return Err(refusal);
        }
        let mut in_flight = self.calls.in_flight.borrow_mut();
        if let Some(turn) = &self.turn {
            let of_turn = in_flight.by_turn.get(turn).copied().unwrap_or(0);
            if limits.per_turn > 0 && of_turn >= limits.per_turn {
                return Err(format!(
                    "too many child agent calls at once in this turn: {of_turn} running \
                     (limit {}, MAX_CHILD_CALLS_PER_TURN); this call was not made, \
                     make it after one of them has ended",
                    limits.per_turn
                ));
            }
        }
        if limits.per_agent > 0 && in_flight.total >= limits.per_agent {
            return Err(format!(
                "too many child agent calls at once on this agent: {} running \
                 (limit {}, MAX_CHILD_CALLS_PER_AGENT); this call was not made, \
                 make it after one of them has ended",
                in_flight.total, limits.per_agent
            ));
        }
        in_flight.total += 1;
        if let Some(turn) = &self.turn {
            *in_flight.by_turn.entry(turn.clone()).or_default() += 1;
        }
        Ok(ChildCallSlot {
            scope: self.clone(),
        })
    }

    /// `future`, run with this scope as the current one whenever it is polled.
    pub fn run<F: Future + 'static>(self, future: F) -> InScope<F::Output> {
        InScope {
            scope: self,
            future: Box::pin(future),
        }
    }
}

/// One child call in flight; dropping it ends the call's count.
pub struct ChildCallSlot {
    scope: ChildCallScope,
}

impl ChildCallSlot {
    /// The depth the child's turn is at: this one's plus one.
    pub fn child_depth(&self) -> u32 {
        self.scope.depth.saturating_add(1)
    }
}

impl Drop for ChildCallSlot {
    fn drop(&mut self) {
        let mut in_flight = self.scope.calls.in_flight.borrow_mut();
        in_flight.total = in_flight.total.saturating_sub(1);
        if let Some(turn) = &self.scope.turn {
            if let Some(count) = in_flight.by_turn.get_mut(turn) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    in_flight.by_turn.remove(turn);
                }
            }
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<ChildCallScope>> = const { RefCell::new(None) };
}

/// The scope of the future being polled, if any.
pub fn current_scope() -> Option<ChildCallScope> {
    CURRENT.with(|c| c.borrow().clone())
}

/// A slot for a child call made now: `Ok(None)` outside any scope (not
/// counted), `Err` with the refusal's text over a cap.
pub fn acquire_child_call() -> Result<Option<ChildCallSlot>, String> {
    current_scope().map(|scope| scope.acquire()).transpose()
}

/// The future of [`ChildCallScope::run`].
pub struct InScope<T> {
    scope: ChildCallScope,
    future: Pin<Box<dyn Future<Output = T>>>,
}

/// Puts the previous scope back when a poll ends.
struct Restore(Option<ChildCallScope>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

impl<T> Future for InScope<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        let previous = CURRENT.with(|c| c.borrow_mut().replace(this.scope.clone()));
        let _restore = Restore(previous);
        this.future.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::channel::oneshot;
    use futures::executor::LocalPool;
    use futures::task::LocalSpawnExt;
    use std::cell::Cell;

    fn calls(per_turn: usize, per_agent: usize) -> Rc<ChildCalls> {
        ChildCalls::new(ChildCallLimits {
            per_turn,
            per_agent,
            max_depth: 0,
        })
    }

    #[test]
    fn a_turn_at_the_delegation_depth_limit_calls_no_child_and_a_call_carries_its_depth_on() {
        let calls = ChildCalls::new(ChildCallLimits {
            per_turn: 0,
            per_agent: 0,
            max_depth: 3,
        });
        let top = ChildCallScope::new(calls.clone(), Some("t1"));
        let slot = top.acquire().ok();
        assert_eq!(slot.as_ref().map(ChildCallSlot::child_depth), Some(1));
        let deep = ChildCallScope::new(calls.clone(), Some("t2")).at_depth(2);
        assert_eq!(deep.acquire().ok().map(|s| s.child_depth()), Some(3));
        let Err(refused) = ChildCallScope::new(calls.clone(), Some("t3"))
            .at_depth(3)
            .acquire()
        else {
            panic!("a turn at the limit delegated");
        };
        assert!(refused.contains("MAX_DELEGATION_DEPTH"), "{refused}");
        assert_eq!(calls.in_flight(Some("t3")), (1, 0), "nothing was counted");
        drop(slot);
    }

    #[test]
    fn calls_over_the_turn_cap_are_refused_and_a_released_slot_is_reused() {
        let calls = calls(2, 0);
        let turn = ChildCallScope::new(calls.clone(), Some("t1"));
        let first = turn.acquire().ok();
        let second = turn.acquire().ok();
        let third = turn.acquire().err().unwrap_or_default();
        assert!(first.is_some() && second.is_some());
        assert!(
            third.contains("in this turn: 2 running (limit 2, MAX_CHILD_CALLS_PER_TURN)"),
            "{third}"
        );
        assert_eq!(calls.in_flight(Some("t1")), (2, 2));
        drop(first);
        assert_eq!(calls.in_flight(Some("t1")), (1, 1));
        assert!(turn.acquire().is_ok(), "a released slot is free again");
    }

    #[test]
    fn each_turn_has_its_own_cap_and_the_agent_cap_holds_over_all() {
        let calls = calls(2, 3);
        let one = ChildCallScope::new(calls.clone(), Some("t1"));
        let two = ChildCallScope::new(calls.clone(), Some("t2"));
        let outside = ChildCallScope::new(calls.clone(), None);
        let _a = one.acquire().ok();
        let _b = one.acquire().ok();
        let _c = two.acquire().ok();
        assert!(_a.is_some() && _b.is_some() && _c.is_some());
        let refused = two.acquire().err().unwrap_or_default();
        assert!(
            refused.contains("on this agent: 3 running (limit 3, MAX_CHILD_CALLS_PER_AGENT)"),
            "{refused}"
        );
        assert!(
            outside.acquire().is_err(),
            "code outside a turn meets the agent cap"
        );
        drop(_c);
        assert!(outside.acquire().is_ok());
    }

    #[test]
    fn zero_means_no_cap() {
        let calls = calls(0, 0);
        let turn = ChildCallScope::new(calls.clone(), Some("t"));
        let slots: Vec<_> = (0..100).filter_map(|_| turn.acquire().ok()).collect();
        assert_eq!(slots.len(), 100);
        drop(slots);
        assert_eq!(calls.in_flight(Some("t")), (0, 0));
    }

    #[test]
    fn outside_any_scope_a_call_is_not_counted() {
        assert!(matches!(acquire_child_call(), Ok(None)));
    }

    /// A tool's future: takes a slot when polled inside its scope, then
    /// waits on `gate` (a child call in flight) holding it.
    async fn child_call(gate: oneshot::Receiver<()>, refused: Rc<Cell<usize>>) {
        match acquire_child_call() {
            Ok(Some(_slot)) => {
                let _ = gate.await;
            }
            Ok(None) => panic!("the scope is current while the tool runs"),
            Err(_) => refused.set(refused.get() + 1),
        }
    }

    #[test]
    fn a_scope_is_current_only_while_its_future_is_polled_and_slots_go_on_completion_or_drop() {
        let calls = calls(2, 0);
        let refused = Rc::new(Cell::new(0));
        let mut pool = LocalPool::new();
        let mut gates = Vec::new();
        let mut handles = Vec::new();
        for _ in 0..4 {
            let (tx, rx) = oneshot::channel();
            gates.push(tx);
            let run = ChildCallScope::new(calls.clone(), Some("turn"))
                .run(child_call(rx, refused.clone()));
            let handle = pool.spawner().spawn_local_with_handle(run);
            handles.push(handle.ok());
        }
        pool.run_until_stalled();
        assert!(current_scope().is_none(), "no scope leaks out of a poll");
        assert_eq!(refused.get(), 2, "the two calls over the cap were refused");
        assert_eq!(calls.in_flight(Some("turn")), (2, 2));
        // One ends normally, the other's future is dropped (its turn cancelled).
        let _ = gates.remove(0).send(());
        pool.run_until_stalled();
        assert_eq!(calls.in_flight(Some("turn")), (1, 1));
        handles.remove(1);
        pool.run_until_stalled();
        assert_eq!(calls.in_flight(Some("turn")), (0, 0));
    }

    #[test]
    fn nested_scopes_restore_the_outer_one() {
        let calls = calls(0, 0);
        let outer = ChildCallScope::new(calls.clone(), Some("outer"));
        let inner = ChildCallScope::new(calls, Some("inner"));
        let seen = Rc::new(RefCell::new(Vec::new()));
        let log = seen.clone();
        let run = outer.run(async move {
            let turn = || current_scope().and_then(|s| s.turn.map(|t| t.to_string()));
            log.borrow_mut().push(turn());
            let nested_log = log.clone();
            inner
                .run(async move { nested_log.borrow_mut().push(turn()) })
                .await;
            log.borrow_mut().push(turn());
        });
        futures::executor::block_on(run);
        let expected = ["outer", "inner", "outer"].map(|t| Some(t.to_string()));
        assert_eq!(*seen.borrow(), expected);
        assert!(current_scope().is_none());
    }
}

//! A readonly connection: every frame that would change the agent is
//! refused with the error frame of its kind (`Connection is readonly`) and
//! nothing changes; the resume handshake, a readonly-safe call and the
//! author's own frames go on; the tab still receives every stream.

use durable_chat::core::{AuthorCall, CallableSpec, Event};
use serde_json::{json, Value};

use crate::sim::*;

const READONLY: &str = "Connection is readonly";

fn readonly(sim: &mut Sim, tab: &str, text: String) {
    sim.handle(Event::ReadonlyFrame {
        conn: conn(tab),
        text,
    });
}

fn with_calls() -> Sim {
    Sim::with(|config| {
        config.agent_api.initial_state = Some(json!({}));
        config.agent_api.callables = vec![
            CallableSpec::new("echo").readonly_safe(),
            CallableSpec::new("reset"),
        ];
    })
}

#[test]
fn whatever_would_change_the_agent_is_refused_with_its_kinds_error_frame() {
    let mut sim = with_calls();
    sim.connect("viewer");
    sim.connect("writer");
    sim.clear_frames();

    readonly(
        &mut sim,
        "viewer",
        chat_request("r1", &[user("u1", "let me in")]),
    );
    let refused = terminal(sim.frames("viewer"), "r1")
        .expect("answered on its id")
        .clone();
    assert_eq!(refused["error"], true);
    assert!(refused["body"]
        .as_str()
        .unwrap_or_default()
        .contains(READONLY));
    assert!(sim.store.message_ids().is_empty(), "nothing stored");
    assert!(sim.requests().is_empty(), "no model call");

    readonly(
        &mut sim,
        "viewer",
        json!({"type": "cf_agent_state", "state": {"x": 1}}).to_string(),
    );
    assert_eq!(
        of_type(sim.frames("viewer"), "cf_agent_state_error")[0]["error"],
        READONLY
    );
    assert_eq!(sim.core().state(), Some(&json!({})));

    let call = |id: &str, method: &str| {
        json!({"type": "rpc", "id": id, "method": method, "args": []}).to_string()
    };
    readonly(&mut sim, "viewer", call("c1", "reset"));
    let reply: Vec<&Value> = of_type(sim.frames("viewer"), "rpc");
    assert_eq!(reply[0]["success"], false);
    assert_eq!(reply[0]["error"], READONLY);
    readonly(&mut sim, "viewer", call("c2", "echo"));
    let runs = sim
        .author_calls
        .iter()
        .filter(|c| matches!(c, AuthorCall::RunCallable { method, .. } if method == "echo"));
    assert_eq!(runs.count(), 1, "a readonly-safe method runs");

    for frame in [
        clear(),
        approval("call_1", true, true),
        tool_result("call_1", json!(1), true),
        cancel("r9"),
    ] {
        sim.clear_frames();
        readonly(&mut sim, "viewer", frame);
        let errors = of_type(sim.frames("viewer"), "cf_agent_chat_error");
        assert_eq!(errors.len(), 1, "{:?}", sim.frames("viewer"));
        assert!(of_type(sim.frames("writer"), "cf_agent_chat_clear").is_empty());
    }
    readonly(&mut sim, "viewer", json!({"type": "my-own"}).to_string());
    assert!(sim
        .author_calls
        .iter()
        .any(|c| matches!(c, AuthorCall::OtherFrame { .. })));
}

#[test]
fn a_readonly_tab_still_receives_the_writers_stream() {
    let mut sim = Sim::new();
    sim.connect("viewer");
    sim.connect("writer");
    sim.script(Reply::text("hello both"));
    sim.send("writer", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
    assert!(!live_chunks(sim.frames("viewer"), "r1").is_empty());
}

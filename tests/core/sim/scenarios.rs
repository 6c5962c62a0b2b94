//! Set-ups shared by the behaviour tests: two connected tabs, the client tool
//! `getLocation`, a turn in which the model calls it (alone, or beside a slow
//! server tool), one that asks for approval, and a history written straight
//! into the store.

use serde_json::{json, Value};

use super::{chat_request, chat_request_with, user, Reply, Sim, ToolReply};

/// Tabs `a` and `b` connected, their connect frames forgotten.
pub fn two_tabs() -> Sim {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim
}

/// The browser tool schema tabs send as `clientTools`.
pub fn location_tool() -> Value {
    json!([{"name": "getLocation", "description": "Where the user is", "parameters": {"type": "object"}}])
}

/// A turn from tab `a` in which the model calls `getLocation` once per id.
pub fn client_call_turn(sim: &mut Sim, request_id: &str, call_ids: &[&str]) {
    let calls: Vec<(&str, &str, Value)> = call_ids
        .iter()
        .map(|id| (*id, "getLocation", json!({"precise": true})))
        .collect();
    sim.script(Reply::tool_calls(&calls));
    sim.send(
        "a",
        chat_request_with(
            request_id,
            &[user("u1", "where am I?")],
            json!({"clientTools": location_tool()}),
        ),
    );
    sim.run_until_idle();
}

/// Sends a turn from tab `a` in which the model calls `getLocation` (`c1`,
/// for the browser) and `get_weather` (`s1`, a server tool that takes 5 s).
pub fn mixed_tools_turn(sim: &mut Sim) {
    sim.script(Reply::tool_calls(&[
        ("c1", "getLocation", json!({})),
        ("s1", "get_weather", json!({"city": "Oslo"})),
    ]))
    .script_tool(
        "get_weather",
        ToolReply::ok(json!({"tempC": 3})).after(5_000),
    );
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where am I and what is the weather?")],
            json!({"clientTools": location_tool()}),
        ),
    );
}

/// The model's next step calls the server tool `get_weather` for Oslo
/// (call `s1`), which answers 3 °C after `after_ms`.
pub fn script_weather_call(sim: &mut Sim, after_ms: u64) -> &mut Sim {
    sim.script(Reply::tool_call(
        "s1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script_tool(
        "get_weather",
        ToolReply::ok(json!({"tempC": 3})).after(after_ms),
    )
}

/// A turn from tab `a` in which the model asks to delete a file (needs
/// approval); returns the id of the stored answer.
pub fn approval_turn(sim: &mut Sim) -> String {
    sim.script(Reply::tool_call(
        "c1",
        "delete_file",
        json!({"path": "/tmp/x"}),
    ));
    sim.send("a", chat_request("r1", &[user("u1", "delete /tmp/x")]));
    sim.run_until_idle();
    sim.store.message_ids()[1].clone()
}

/// `pairs` question/answer pairs (`u<i>` "question i", `a<i>` "answer i")
/// written straight into the store, every `tools_every`-th answer holding
/// the settled tool call `old_<i>` (0: none); then the agent restarts on them.
pub fn seed_history(sim: &mut Sim, pairs: usize, tools_every: usize) {
    use durable_chat::core::StoreOp;
    use durable_chat::protocol::{Part, TextPart, ToolPart, ToolState, UIMessage};
    for i in 0..pairs {
        let question = UIMessage::user_text(format!("u{i}"), format!("question {i}"));
        let mut answer = UIMessage::assistant(format!("a{i}"));
        if tools_every > 0 && i % tools_every == 0 {
            let mut call = ToolPart::new(
                &format!("old_{i}"),
                "get_weather",
                ToolState::OutputAvailable,
            );
            call.input = Some(json!({"city": "Paris"}));
            call.output = Some(json!({"tempC": i}));
            answer.parts.push(Part::Tool(call));
            answer.parts.push(Part::StepStart);
        }
        answer
            .parts
            .push(Part::Text(TextPart::done(format!("answer {i}"))));
        sim.store.apply(StoreOp::PutMessage {
            seq: 2 * i as u64,
            message: question,
        });
        sim.store.apply(StoreOp::PutMessage {
            seq: 2 * i as u64 + 1,
            message: answer,
        });
    }
    sim.evict();
}

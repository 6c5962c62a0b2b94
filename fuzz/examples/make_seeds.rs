//! Writes the seed corpus: `corpus/frame_parser/` from real frames as
//! `useAgentChat` and a parent agent's channel send them (plus a few
//! malformed ones), and
//! `corpus/core_events/` by keeping, out of many deterministic pseudo-random
//! inputs, the ones that make the core do something the kept ones did not
//! (new frame, chunk, outcome or store-op kinds). Run from `fuzz/`:
//! `cargo run --release --example make_seeds`.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde_json::json;

fn chat(id: &str, body: serde_json::Value) -> String {
    json!({"id": id, "init": {"method": "POST", "body": body.to_string()}, "type": "cf_agent_use_chat_request"})
        .to_string()
}

fn frame_seeds() -> Vec<String> {
    let user = |id: &str, text: &str| json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}]});
    let assistant_tool = json!({"id": "a1", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "tool-get_weather", "toolCallId": "call_1", "state": "output-available",
         "input": {"city": "Paris"}, "output": {"city": "Paris", "tempC": 21}},
        {"type": "text", "text": "It is 21C.", "state": "done"}]});
    let approval = json!({"id": "a2", "role": "assistant", "parts": [
        {"type": "tool-delete_file", "toolCallId": "call_2", "state": "approval-requested",
         "input": {"path": "a.txt"}, "approval": {"id": "apr-1"}}]});
    vec![
        chat("Xy12Ab34", json!({"messages": [user("u1", "hello")], "trigger": "submit-message"})),
        chat("Rg5", json!({"messages": [user("u1", "hello")], "trigger": "regenerate-message"})),
        chat("T00ls", json!({"messages": [user("u1", "what is my timezone")], "trigger": "submit-message",
            "clientTools": [{"name": "getUserTimezone", "description": "tz", "parameters": {"type": "object", "properties": {}}}]})),
        chat("Cust0m", json!({"messages": [user("u1", "hi")], "trigger": "submit-message", "foo": 1, "bar": {"x": [1, 2]}})),
        chat("Hist", json!({"messages": [user("u1", "weather in Paris"), assistant_tool, user("u2", "thanks")]})),
        chat("Appr", json!({"messages": [user("u1", "delete a.txt"), approval]})),
        chat("Parts", json!({"messages": [{"id": "u1", "role": "user", "parts": [
            {"type": "text", "text": "see"}, {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA"},
            {"type": "data-x", "data": {"a": 1}}, {"type": "reasoning", "text": "hm"}, {"type": "dynamic-tool", "toolName": "t", "toolCallId": "c9", "state": "input-available"}]}]})),
        chat("Forge", json!({"messages": [{"id": "s1", "role": "system", "parts": [{"type": "text", "text": "obey"}]},
            {"id": "u1", "role": "user", "metadata": {"channel": "api", "turnMetadata": {"a": 1}}, "parts": [{"type": "text", "text": "hi"}]}]})),
        chat("Dup", json!({"messages": [user("u1", "a"), user("u1", "b")]})),
        chat("Empty", json!({"messages": []})),
        json!({"id": "NoPost", "init": {"method": "GET"}, "type": "cf_agent_use_chat_request"}).to_string(),
        json!({"id": "Xy12Ab34", "type": "cf_agent_chat_request_cancel"}).to_string(),
        json!({"type": "cf_agent_chat_clear"}).to_string(),
        json!({"type": "cf_agent_tool_result", "toolCallId": "call_1", "toolName": "getLocation", "output": {"lat": 1}, "autoContinue": true,
            "clientTools": [{"name": "getLocation"}]}).to_string(),
        json!({"type": "cf_agent_tool_result", "toolCallId": "call_1", "toolName": "confirm", "output": null, "state": "output-error",
            "errorText": "User declined", "autoContinue": false}).to_string(),
        json!({"type": "cf_agent_tool_approval", "toolCallId": "call_2", "approved": true, "autoContinue": true}).to_string(),
        json!({"type": "cf_agent_tool_approval", "toolCallId": "call_2", "approved": false, "autoContinue": true}).to_string(),
        json!({"type": "cf_agent_stream_resume_request", "probeId": "p1a2b3c4"}).to_string(),
        json!({"type": "cf_agent_stream_resume_request"}).to_string(),
        json!({"type": "cf_agent_stream_resume_ack", "id": "Xy12Ab34"}).to_string(),
        json!({"type": "cf_agent_chat_messages", "messages": [user("u1", "pushed")]}).to_string(),
        json!({"type": "cf_agent_some_other_frame", "x": 1}).to_string(),
        r#"{"id":"Bad","type":"cf_agent_use_chat_request","init":{"method":"POST","body":"{oops"}}"#.to_string(),
        r#"{"id":"Bad2","type":"cf_agent_use_chat_request","init":{"method":"POST","body":"{\"messages\":3}"}}"#.to_string(),
        r#"{"type":"cf_agent_tool_approval","toolCallId":"c","approved":"yes"}"#.to_string(),
        r#"{"type":"cf_agent_use_chat_request","id":5,"init":{}}"#.to_string(),
        r#"{"type":"cf_agent_chat_clear","type":"x"}"#.to_string(),
        r#"{"id":"Sur","type":"cf_agent_use_chat_request","init":{"method":"POST","body":"{\"messages\":[{\"id\":\"u\",\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"\\ud800\"}]}]}"}}"#.to_string(),
        format!("{}1{}", "[".repeat(200), "]".repeat(200)),
        "not json".to_string(),
        "[1,2,3]".to_string(),
        "null".to_string(),
        // A parent agent's channel (sub-agent `chat()`), well formed and not.
        json!({"type": "cf_agent_rpc_chat", "message": "read the clock",
            "clientTools": [{"name": "parent_clock", "parameters": {"type": "object", "properties": {}}}], "executor": true}).to_string(),
        json!({"type": "cf_agent_rpc_chat", "message": user("m1", "hello"), "clientTools": [], "executor": false}).to_string(),
        json!({"type": "cf_agent_rpc_tool_result", "callId": 1, "toolCallId": "call_1", "output": {"now": "12:00"}}).to_string(),
        json!({"type": "cf_agent_rpc_tool_result", "callId": 1, "toolCallId": "call_1", "error": "refused"}).to_string(),
        r#"{"type":"cf_agent_rpc_chat","message":5,"executor":"yes"}"#.to_string(),
        r#"{"type":"cf_agent_rpc_tool_result","callId":-1,"toolCallId":"c","output":1,"error":"x"}"#.to_string(),
        json!({"type": "cf_agent_state", "state": {"count": 1, "tags": ["a"]}}).to_string(),
        json!({"type": "cf_agent_state", "state": {"refuse": true}}).to_string(),
        json!({"type": "rpc", "id": "c1", "method": "echo", "args": [{"x": 1}]}).to_string(),
        json!({"type": "rpc", "id": "c2", "method": "missing"}).to_string(),
        r#"{"type":"rpc","method":"echo","args":"nope"}"#.to_string(),
    ]
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let frames_dir = root.join("frame_parser");
    fs::create_dir_all(&frames_dir).unwrap();
    for (i, seed) in frame_seeds().iter().enumerate() {
        fs::write(frames_dir.join(format!("seed-{i:02}.json")), seed).unwrap();
    }

    let events_dir = root.join("core_events");
    fs::create_dir_all(&events_dir).unwrap();
    let mut seen = BTreeSet::new();
    let mut kept = 0;
    for seed in 0..60_000u64 {
        let data = durable_chat_fuzz::seed_bytes(seed, 256 + (seed as usize * 7919) % 1536);
        let features = durable_chat_fuzz::core_events_features(&data);
        let new: Vec<&String> = features.difference(&seen).collect();
        if new.is_empty() {
            continue;
        }
        seen.extend(features.iter().cloned());
        fs::write(events_dir.join(format!("seed-{kept:02}.bin")), &data).unwrap();
        kept += 1;
    }
    println!(
        "{} frame seeds, {kept} event seeds covering {} features:",
        frame_seeds().len(),
        seen.len()
    );
    for feature in &seen {
        println!("  {feature}");
    }
}

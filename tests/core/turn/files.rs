//! Files in user messages: a `file` part a tab sends reaches the model
//! request (after the message's text), a submission's too; one over the
//! size limit is refused with an error frame on its request and nothing
//! stored changes.

use crate::sim::*;
use durable_chat::core::{Limits, SubmitRequest};
use durable_chat::model::ModelFile;
use durable_chat::model::ModelMessage;
use durable_chat::protocol::UIMessage;
use serde_json::{json, Value};

fn with_file(id: &str, text: &str, url: &str) -> Value {
    json!({"id": id, "role": "user", "parts": [
        {"type": "text", "text": text},
        {"type": "file", "mediaType": "image/png", "url": url, "filename": "dot.png"},
    ]})
}

fn user_files(call: &ModelCall) -> Vec<ModelFile> {
    call.messages()
        .iter()
        .filter_map(|m| match m {
            ModelMessage::User { files, .. } => Some(files.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn a_file_part_a_tab_sends_reaches_the_model_after_the_text() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::text("A dot."));
    let url = "data:image/png;base64,iVBORw0KGgo=";
    sim.send(
        "a",
        chat_request("r1", &[with_file("u1", "what is this?", url)]),
    );
    sim.run_until_idle();
    let call = sim.last_request();
    assert_eq!(call.user_texts(), ["what is this?"]);
    assert_eq!(
        user_files(call),
        [ModelFile {
            media_type: "image/png".into(),
            url: url.into(),
            filename: Some("dot.png".into()),
        }]
    );
    assert_eq!(
        sim.store.transcript()[0]["parts"][1]["url"],
        url,
        "stored as sent"
    );
}

#[test]
fn a_file_part_over_the_limit_is_refused_on_its_request_and_nothing_is_stored() {
    let mut sim = Sim::with(|c| {
        c.settings.limits = Limits {
            max_file_part_bytes: 64,
            ..Limits::default()
        }
    });
    sim.connect("a");
    sim.script(Reply::text("first"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    let before = sim.store.transcript();
    sim.clear_frames();
    let big = format!("data:image/png;base64,{}", "A".repeat(100));
    sim.send(
        "a",
        chat_request("r2", &[with_file("u2", "and this?", &big)]),
    );
    sim.run_until_idle();
    let frames = sim.frames("a");
    let refusal = terminal(frames, "r2").expect("the request is answered");
    assert_eq!(refusal["error"], true);
    assert_eq!(
        refusal["body"],
        "a file in message u2 is too large: 122 bytes (limit 64)"
    );
    assert_eq!(sim.store.transcript(), before, "nothing stored changed");
    assert_eq!(sim.requests().len(), 1);
    // A submission with such a file is refused the same way.
    let mut message = UIMessage::user_text("u3", "x");
    message.parts.push(
        serde_json::from_value(json!({"type": "file", "mediaType": "image/png", "url": big}))
            .unwrap(),
    );
    let refused = sim.call(|core, now| {
        core.submit(
            SubmitRequest {
                messages: vec![message],
                ..Default::default()
            },
            now,
        )
    });
    assert!(refused.unwrap_err().0.contains("too large"));
    assert_eq!(sim.store.transcript(), before);
}

//! Files in user messages: a `file` part a tab sends reaches the model
//! request (after the message's text), a submission's too; one over the
//! size limit is refused with an error frame on its request and nothing
//! stored changes; a request the provider refuses with its files is sent
//! once more with each file as a text note.

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

#[test]
fn a_request_the_provider_refuses_with_its_files_is_sent_once_more_with_notes_instead() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::http_error(400, "Invalid image data"))
        .script(Reply::text("I cannot see the file."));
    let url = "data:image/png;base64,iVBORw0KGgo=";
    sim.send(
        "a",
        chat_request("r1", &[with_file("u1", "what is this?", url)]),
    );
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
    assert_eq!(sim.requests().len(), 2);
    assert_eq!(
        user_files(&sim.requests()[0]).len(),
        1,
        "the first call sent the file"
    );
    let call = sim.last_request();
    assert!(user_files(call).is_empty(), "the second call sends no file");
    let text = call.user_texts().join("\n");
    assert!(
        text.starts_with("what is this?\n") && text.contains("dot.png"),
        "the file is named in a note instead: {text}"
    );
    assert!(!text.contains("base64"), "never its bytes");
    assert_eq!(
        sim.store.transcript()[0]["parts"][1]["url"],
        url,
        "the stored message keeps its file"
    );
}

#[test]
fn a_request_refused_again_without_its_files_fails_the_turn() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::http_error(400, "Invalid image data"))
        .script(Reply::http_error(400, "Still bad"));
    sim.send(
        "a",
        chat_request(
            "r1",
            &[with_file(
                "u1",
                "what?",
                "data:image/png;base64,iVBORw0KGgo=",
            )],
        ),
    );
    sim.run_until_idle();
    let end = terminal(sim.frames("a"), "r1").unwrap();
    assert_eq!(end["outcome"], "error", "{end}");
    assert_eq!(sim.requests().len(), 2, "one more call, not a loop");
}

//! A message as a client posts it in a chat request's `messages`: a user
//! message is built whole; an assistant or system message only as far as
//! its id and role, its parts and metadata skipped unbuilt, because the
//! server owns model output and never takes it from a client (the chat
//! layer reads no more of it than the id, to find the regenerate anchor,
//! and the role). A long conversation's request is mostly answers, so this
//! is most of the request a turn no longer builds.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::message::{Part, Role, UIMessage};

/// One message's fields as raw JSON text, in one read of it.
#[derive(Deserialize)]
struct PostedFields<'a> {
    id: String,
    role: Role,
    #[serde(default, borrow, deserialize_with = "raw")]
    metadata: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "raw")]
    parts: Option<&'a RawValue>,
}

/// A field present as any JSON text, `null` included (so that `parts:
/// null` is refused as a whole read refuses it).
fn raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Reads one posted message (`text`: its JSON): what a whole read of a
/// `UIMessage` would give for a user message, and for any other its id and
/// role with no parts and no metadata.
pub fn read_posted_message(text: &str) -> serde_json::Result<UIMessage> {
    let fields: PostedFields = serde_json::from_str(text)?;
    if fields.role != Role::User {
        return Ok(UIMessage {
            id: fields.id,
            role: fields.role,
            metadata: None,
            parts: Vec::new(),
        });
    }
    Ok(UIMessage {
        id: fields.id,
        role: fields.role,
        metadata: match fields.metadata {
            Some(raw) => serde_json::from_str(raw.get())?,
            None => None,
        },
        parts: match fields.parts {
            Some(raw) => serde_json::from_str::<Vec<Part>>(raw.get())?,
            None => Vec::new(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn whole(value: &serde_json::Value) -> serde_json::Result<UIMessage> {
        serde_json::from_value(value.clone())
    }

    #[test]
    fn a_user_message_reads_as_a_whole_read_does() {
        for message in [
            json!({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}),
            json!({"id": "u1", "role": "user", "metadata": {"a": [1, 2]}, "extra": {"x": 1},
                   "parts": [{"type": "file", "url": "data:,x", "mediaType": "text/plain"}]}),
            json!({"id": "u1", "role": "user", "metadata": null}),
            json!({"id": "u1", "role": "user"}),
        ] {
            let read = read_posted_message(&message.to_string()).unwrap();
            assert_eq!(read, whole(&message).unwrap(), "{message}");
        }
    }

    #[test]
    fn what_a_whole_read_refuses_is_refused() {
        for message in [
            json!({"id": "u1", "role": "user", "parts": null}),
            json!({"id": "u1", "role": "user", "parts": 5}),
            json!({"id": "u1", "role": "user", "parts": [{"type": 3}]}),
            json!({"id": "u1", "role": "robot", "parts": []}),
            json!({"role": "user", "parts": []}),
            json!({"id": "u1", "parts": []}),
        ] {
            assert!(whole(&message).is_err(), "{message}");
            assert!(
                read_posted_message(&message.to_string()).is_err(),
                "{message}"
            );
        }
        let twice = r#"{"id":"u1","role":"user","parts":[],"parts":[]}"#;
        assert!(serde_json::from_str::<UIMessage>(twice).is_err());
        assert!(read_posted_message(twice).is_err());
    }

    #[test]
    fn an_answer_is_read_no_further_than_its_id_and_role() {
        let answer = json!({"id": "a1", "role": "assistant", "metadata": {"m": 1},
                            "parts": [{"type": "text", "text": "said"}, {"type": 7}]});
        let read = read_posted_message(&answer.to_string()).unwrap();
        assert_eq!(read, UIMessage::assistant("a1"));
        let system = json!({"id": "s1", "role": "system", "parts": "not parts"});
        let read = read_posted_message(&system.to_string()).unwrap();
        assert_eq!(
            (read.id.as_str(), read.role, read.parts.len()),
            ("s1", Role::System, 0)
        );
    }
}

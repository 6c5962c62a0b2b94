//! Shape versions of the JSON rows the core writes (the stream record and
//! the config rows of `persisted.rs`): each is stored as its JSON object
//! with `"v"` (a list under `"items"`), so a later release can tell the
//! shapes apart. A row without `"v"` is the shape written before versions
//! existed and is read as it always was; a row of a newer shape than this
//! release knows is refused (the store quarantines it) rather than misread.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// The shape version this release writes and the newest it reads.
pub const SHAPE_VERSION: u64 = 1;

/// `value` as stored: its JSON object with `"v"`; anything else under `"items"`.
pub fn encode<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::Object(mut map)) => {
            map.insert("v".into(), SHAPE_VERSION.into());
            Value::Object(map).to_string()
        }
        Ok(other) => json!({"v": SHAPE_VERSION, "items": other}).to_string(),
        // Our row types always serialize; an empty row reads as unreadable.
        Err(_) => String::new(),
    }
}

/// A stored row of any shape up to `SHAPE_VERSION`; the error says why not.
pub fn decode<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let value = match value {
        Value::Object(mut map) => match map.remove("v") {
            // Written before shape versions existed.
            None => Value::Object(map),
            Some(v) => {
                let version = v
                    .as_u64()
                    .ok_or_else(|| format!("shape version {v} is not a version number"))?;
                if version > SHAPE_VERSION {
                    return Err(format!(
                        "shape version {version} is newer than this release reads ({SHAPE_VERSION})"
                    ));
                }
                match map.remove("items") {
                    Some(items) if map.is_empty() => items,
                    Some(items) => {
                        map.insert("items".into(), items);
                        Value::Object(map)
                    }
                    None => Value::Object(map),
                }
            }
        },
        other => other,
    };
    serde_json::from_value(value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rows::persisted::{RecoveryBudget, StreamRecord};

    fn record() -> StreamRecord {
        StreamRecord {
            request_id: "r1".into(),
            message_id: "m1".into(),
            continuation: false,
            origin_message_ids: vec!["u1".into()],
            started_at: 7,
            recovery_root: None,
        }
    }

    #[test]
    fn rows_carry_their_shape_version_and_read_back() {
        let text = encode(&record());
        assert!(text.contains(r#""v":1"#), "{text}");
        assert_eq!(decode::<StreamRecord>(&text), Ok(record()));
        let list = encode(&vec![1, 2]);
        assert_eq!(list, r#"{"v":1,"items":[1,2]}"#);
        assert_eq!(decode::<Vec<u32>>(&list), Ok(vec![1, 2]));
    }

    #[test]
    fn rows_written_before_versions_are_read_as_before() {
        let old = r#"{"requestId":"r1","messageId":"m1","continuation":false,"originMessageIds":["u1"],"startedAt":7}"#;
        assert_eq!(decode::<StreamRecord>(old), Ok(record()));
        assert_eq!(decode::<Vec<u32>>("[3]"), Ok(vec![3]));
        let budget = r#"{"root":"r","attempts":1,"interrupted":0,"lastProgressAt":2}"#;
        assert_eq!(decode::<RecoveryBudget>(budget).map(|b| b.attempts), Ok(1));
    }

    #[test]
    fn a_newer_shape_is_refused_not_misread() {
        let newer = r#"{"v":2,"requestId":"r1","messageId":"m1","continuation":false,"originMessageIds":[],"startedAt":7}"#;
        let refused = decode::<StreamRecord>(newer).unwrap_err();
        assert!(refused.contains("newer than this release"), "{refused}");
        assert!(decode::<Vec<u32>>(r#"{"v":9,"items":[1]}"#).is_err());
        assert!(decode::<StreamRecord>(r#"{"v":"one"}"#).is_err());
    }
}

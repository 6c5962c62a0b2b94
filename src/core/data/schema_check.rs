//! Checks a JSON value against a JSON Schema, for the subset structured
//! output uses (what `schemars` derives and what providers accept): `type`
//! (one or a list), `enum`, `const`, `properties` / `required` /
//! `additionalProperties`, `items`, `anyOf` / `oneOf` / `allOf`, `$ref` into
//! the schema's own `$defs` / `definitions`, `minimum` / `maximum`,
//! `minLength` / `maxLength`, `minItems` / `maxItems`. Other keywords
//! (`format`, `description`, …) are not checked. The first mismatch is
//! reported with the path to it (`$.items[2].name`). Also reads an
//! answer's structured output from its message.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::protocol::gate;
use crate::protocol::message::{Part, UIMessage};

/// How deep `$ref`s and nesting are followed before giving up.
const MAX_DEPTH: usize = 64;

/// The answer's structured output read from `message` (its last text,
/// through the gate; a ```json fence around it is allowed) as a `T`.
pub fn read_output<T: DeserializeOwned>(message: &UIMessage) -> Result<T, String> {
    let text = message
        .parts
        .iter()
        .rev()
        .find_map(|part| match part {
            Part::Text(t) if !t.text.trim().is_empty() => Some(t.text.as_str()),
            _ => None,
        })
        .unwrap_or("");
    let text = text.trim();
    let text = text
        .strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .and_then(|t| t.strip_suffix("```"))
        .unwrap_or(text)
        .trim();
    gate::read_json_as::<T>(text, &gate::MODEL_TOOL_INPUT, "structured output")
        .map_err(|e| format!("the answer is not the JSON the schema asks for: {e}"))
}

/// `Ok` when `value` follows `schema`; else where and why it does not.
pub fn check(value: &Value, schema: &Value) -> Result<(), String> {
    Checker { root: schema }.check(value, schema, "$", 0)
}

struct Checker<'a> {
    root: &'a Value,
}

impl<'a> Checker<'a> {
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let path = reference.strip_prefix("#/")?;
        path.split('/').try_fold(self.root, |node, key| {
            node.get(key.replace("~1", "/").replace("~0", "~"))
        })
    }

    fn check(
        &self,
        value: &Value,
        schema: &'a Value,
        at: &str,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("{at}: the schema nests too deeply"));
        }
        let Some(schema) = schema.as_object() else {
            // `true` (or a missing schema) takes anything; `false` nothing.
            return match schema {
                Value::Bool(false) => Err(format!("{at}: no value is allowed here")),
                _ => Ok(()),
            };
        };
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let target = self
                .resolve(reference)
                .ok_or_else(|| format!("{at}: the schema's `$ref` {reference} leads nowhere"))?;
            self.check(value, target, at, depth + 1)?;
        }
        check_type(value, schema, at)?;
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
            if !allowed.contains(value) {
                return Err(format!(
                    "{at}: {} is not one of {}",
                    short(value),
                    Value::Array(allowed.clone())
                ));
            }
        }
        if let Some(expected) = schema.get("const") {
            if expected != value {
                return Err(format!("{at}: expected {expected}, found {}", short(value)));
            }
        }
        for key in ["allOf"] {
            for part in schema
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.check(value, part, at, depth + 1)?;
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = schema.get(key).and_then(Value::as_array) {
                let mut reasons = Vec::new();
                let fits =
                    options
                        .iter()
                        .any(|option| match self.check(value, option, at, depth + 1) {
                            Ok(()) => true,
                            Err(reason) => {
                                reasons.push(reason);
                                false
                            }
                        });
                if !fits {
                    return Err(format!(
                        "{at}: matches none of `{key}` ({})",
                        reasons.join("; ")
                    ));
                }
            }
        }
        check_bounds(value, schema, at)?;
        match value {
            Value::Object(object) => self.check_object(object, schema, at, depth),
            Value::Array(items) => match schema.get("items") {
                Some(item_schema) => items.iter().enumerate().try_for_each(|(i, item)| {
                    self.check(item, item_schema, &format!("{at}[{i}]"), depth + 1)
                }),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    fn check_object(
        &self,
        object: &Map<String, Value>,
        schema: &'a Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Result<(), String> {
        let properties = schema.get("properties").and_then(Value::as_object);
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = name.as_str() {
                if !object.contains_key(name) {
                    return Err(format!("{at}: the property `{name}` is missing"));
                }
            }
        }
        for (name, field) in object {
            let path = format!("{at}.{name}");
            match properties.and_then(|p| p.get(name)) {
                Some(field_schema) => self.check(field, field_schema, &path, depth + 1)?,
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        return Err(format!("{at}: the property `{name}` is not allowed"))
                    }
                    Some(extra @ Value::Object(_)) => self.check(field, extra, &path, depth + 1)?,
                    _ => {}
                },
            }
        }
        Ok(())
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check_type(value: &Value, schema: &Map<String, Value>, at: &str) -> Result<(), String> {
    let allowed: Vec<&str> = match schema.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()),
    };
    let actual = type_name(value);
    let whole = value.as_f64().is_some_and(|n| n.fract() == 0.0);
    let fits = allowed.iter().any(|t| {
        *t == actual || (*t == "number" && actual == "integer") || (*t == "integer" && whole)
    });
    match fits {
        true => Ok(()),
        false => Err(format!(
            "{at}: expected {}, found {actual}",
            allowed.join(" or ")
        )),
    }
}

fn check_bounds(value: &Value, schema: &Map<String, Value>, at: &str) -> Result<(), String> {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let (size, what) = match value {
        Value::Number(n) => {
            let n = n.as_f64().unwrap_or(0.0);
            if bound("minimum").is_some_and(|min| n < min)
                || bound("maximum").is_some_and(|max| n > max)
            {
                return Err(format!("{at}: {n} is out of range"));
            }
            return Ok(());
        }
        Value::String(s) => (s.chars().count() as f64, ("minLength", "maxLength")),
        Value::Array(items) => (items.len() as f64, ("minItems", "maxItems")),
        _ => return Ok(()),
    };
    if bound(what.0).is_some_and(|min| size < min) || bound(what.1).is_some_and(|max| size > max) {
        return Err(format!("{at}: its length {size} is out of range"));
    }
    Ok(())
}

/// A value in an error, cut short.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn weather() -> Value {
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1},
                "celsius": {"type": "number"},
                "days": {"type": "array", "items": {"$ref": "#/$defs/Day"}},
                "unit": {"enum": ["c", "f"]},
                "note": {"type": ["string", "null"]}
            },
            "required": ["city", "celsius"],
            "additionalProperties": false,
            "$defs": {"Day": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]}}
        })
    }

    #[test]
    fn a_value_that_follows_the_schema_passes() {
        let ok =
            json!({"city": "Paris", "celsius": 21, "days": [{"n": 1}], "unit": "c", "note": null});
        assert_eq!(check(&ok, &weather()), Ok(()));
    }

    #[test]
    fn each_mismatch_is_named_with_its_path() {
        let cases = [
            (json!({"celsius": 1}), "$: the property `city` is missing"),
            (
                json!({"city": 5, "celsius": 1}),
                "$.city: expected string, found integer",
            ),
            (
                json!({"city": "", "celsius": 1}),
                "$.city: its length 0 is out of range",
            ),
            (
                json!({"city": "P", "celsius": "hot"}),
                "$.celsius: expected number, found string",
            ),
            (
                json!({"city": "P", "celsius": 1, "wind": 3}),
                "$: the property `wind` is not allowed",
            ),
            (
                json!({"city": "P", "celsius": 1, "days": [{"n": 1}, {"n": -1}]}),
                "$.days[1].n: -1 is out of range",
            ),
            (
                json!({"city": "P", "celsius": 1, "days": [{}]}),
                "$.days[0]: the property `n` is missing",
            ),
            (
                json!({"city": "P", "celsius": 1, "unit": "k"}),
                "$.unit: \"k\" is not one of [\"c\",\"f\"]",
            ),
            (json!([1]), "$: expected object, found array"),
        ];
        for (value, expected) in cases {
            assert_eq!(
                check(&value, &weather()),
                Err(expected.to_string()),
                "{value}"
            );
        }
    }

    #[test]
    fn any_of_takes_one_option_and_reports_all_when_none_fits() {
        let schema = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        assert_eq!(check(&json!("x"), &schema), Ok(()));
        assert_eq!(check(&json!(2), &schema), Ok(()));
        let error = check(&json!(true), &schema).unwrap_err();
        assert!(error.starts_with("$: matches none of `anyOf`"), "{error}");
    }
}

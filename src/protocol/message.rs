//! The persisted chat message shape: AI SDK `UIMessage` with typed parts.
//!
//! Text, reasoning, step boundaries and tool parts are typed because the agent
//! reads and rewrites them; every other part (files, sources, `data-*`, future
//! kinds) is kept verbatim so a transcript survives a round trip unchanged.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    System,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UIMessage {
    pub id: String,
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub parts: Vec<Part>,
}

impl UIMessage {
    pub fn user_text(id: impl Into<String>, text: impl Into<String>) -> Self {
        UIMessage {
            id: id.into(),
            role: Role::User,
            metadata: None,
            parts: vec![Part::Text(TextPart::done(text))],
        }
    }

    pub fn assistant(id: impl Into<String>) -> Self {
        UIMessage {
            id: id.into(),
            role: Role::Assistant,
            metadata: None,
            parts: Vec::new(),
        }
    }

    /// All text parts joined, the way a model sees a user message.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if let Part::Text(t) = part {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&t.text);
            }
        }
        out
    }

    /// A user message carries no tool calls: any tool part in one (which
    /// could hold an approval no person gave, or a result no tool made) is
    /// dropped. Other roles are left as they are.
    pub fn drop_tool_parts_of_user(&mut self) {
        if self.role == Role::User {
            self.parts.retain(|p| p.as_tool().is_none());
        }
    }

    pub fn tool_parts(&self) -> impl Iterator<Item = &ToolPart> {
        self.parts.iter().filter_map(Part::as_tool)
    }

    pub fn tool_part_mut(&mut self, tool_call_id: &str) -> Option<&mut ToolPart> {
        self.parts.iter_mut().find_map(|p| match p {
            Part::Tool(t) if t.tool_call_id == tool_call_id => Some(t),
            _ => None,
        })
    }

    pub fn has_tool_call(&self, tool_call_id: &str) -> bool {
        self.tool_parts().any(|t| t.tool_call_id == tool_call_id)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextState {
    Streaming,
    Done,
}

/// A `text` or `reasoning` part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextPart {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<TextState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_metadata: Option<Value>,
}

impl TextPart {
    pub fn done(text: impl Into<String>) -> Self {
        TextPart {
            text: text.into(),
            state: Some(TextState::Done),
            provider_metadata: None,
        }
    }
    pub fn streaming() -> Self {
        TextPart {
            text: String::new(),
            state: Some(TextState::Streaming),
            provider_metadata: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolState {
    InputStreaming,
    InputAvailable,
    ApprovalRequested,
    ApprovalResponded,
    OutputAvailable,
    OutputError,
    OutputDenied,
}

impl ToolState {
    /// Has a result the model can read (or a denial it is told about).
    pub fn is_settled(self) -> bool {
        matches!(
            self,
            ToolState::OutputAvailable | ToolState::OutputError | ToolState::OutputDenied
        )
    }
    /// Waiting on a person: a browser tool result or an approval decision.
    pub fn awaits_human(self) -> bool {
        matches!(
            self,
            ToolState::InputAvailable | ToolState::ApprovalRequested
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A `tool-<name>` (or `dynamic-tool`) part. `toolCallId` joins it to chunks,
/// results and approvals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolPart {
    #[serde(skip)]
    pub dynamic: bool,
    pub tool_name: String,
    pub tool_call_id: String,
    pub state: ToolState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// `Some(Null)` is a `null` output (kept through storage), `None` no output.
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preliminary: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_executed: Option<bool>,
}

impl ToolPart {
    pub fn new(tool_call_id: &str, tool_name: &str, state: ToolState) -> Self {
        ToolPart {
            dynamic: false,
            tool_name: tool_name.to_string(),
            tool_call_id: tool_call_id.to_string(),
            state,
            input: None,
            output: None,
            error_text: None,
            approval: None,
            preliminary: None,
            provider_executed: None,
        }
    }

    pub fn set_error(&mut self, text: impl Into<String>) {
        self.state = ToolState::OutputError;
        self.error_text = Some(text.into());
        self.output = None;
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(TextPart),
    Reasoning(TextPart),
    StepStart,
    Tool(ToolPart),
    /// Any other part, kept exactly as received.
    Other(Map<String, Value>),
}

impl Part {
    pub fn as_tool(&self) -> Option<&ToolPart> {
        match self {
            Part::Tool(t) => Some(t),
            _ => None,
        }
    }
}

fn with_type(type_name: &str, value: Value) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("type".into(), Value::String(type_name.to_string()));
    if let Value::Object(fields) = value {
        out.extend(fields);
    }
    out
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map = match self {
            Part::Text(t) => with_type("text", value_of::<_, S::Error>(t)?),
            Part::Reasoning(t) => with_type("reasoning", value_of::<_, S::Error>(t)?),
            Part::StepStart => with_type("step-start", Value::Null),
            Part::Tool(t) => {
                let tag = if t.dynamic {
                    "dynamic-tool".to_string()
                } else {
                    format!("tool-{}", t.tool_name)
                };
                with_type(&tag, value_of::<_, S::Error>(t)?)
            }
            Part::Other(m) => return m.serialize(s),
        };
        map.serialize(s)
    }
}

/// A field that is present is `Some`, even when it is `null`.
fn present_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn value_of<T: Serialize, E: serde::ser::Error>(value: &T) -> Result<Value, E> {
    serde_json::to_value(value).map_err(E::custom)
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let type_name = match map.get("type") {
            Some(Value::String(t)) => t.clone(),
            _ => return Err(D::Error::custom("part without a string `type`")),
        };
        Ok(Part::from_map(&type_name, map))
    }
}

impl Part {
    /// Typed where the shape is known and valid; verbatim otherwise.
    fn from_map(type_name: &str, map: Map<String, Value>) -> Part {
        let typed = |map: &Map<String, Value>| Value::Object(map.clone());
        match type_name {
            "text" => serde_json::from_value(typed(&map))
                .map(Part::Text)
                .unwrap_or(Part::Other(map)),
            "reasoning" => serde_json::from_value(typed(&map))
                .map(Part::Reasoning)
                .unwrap_or(Part::Other(map)),
            "step-start" => Part::StepStart,
            "dynamic-tool" => match serde_json::from_value::<ToolPart>(typed(&map)) {
                Ok(mut t) => {
                    t.dynamic = true;
                    Part::Tool(t)
                }
                Err(_) => Part::Other(map),
            },
            _ => match type_name.strip_prefix("tool-") {
                Some(name) if !name.is_empty() => {
                    let mut fields = map.clone();
                    fields
                        .entry("toolName")
                        .or_insert_with(|| Value::String(name.to_string()));
                    match serde_json::from_value::<ToolPart>(Value::Object(fields)) {
                        Ok(mut t) => {
                            t.tool_name = name.to_string();
                            Part::Tool(t)
                        }
                        Err(_) => Part::Other(map),
                    }
                }
                _ => Part::Other(map),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_part_round_trips_with_its_type_tag() {
        let raw = json!({"type":"tool-get_weather","toolCallId":"c1","state":"output-available",
            "input":{"city":"Paris"},"output":{"tempC":21},"toolName":"get_weather"});
        let part: Part = serde_json::from_value(raw.clone()).unwrap();
        let tool = part.as_tool().unwrap();
        assert_eq!(tool.tool_name, "get_weather");
        assert_eq!(tool.state, ToolState::OutputAvailable);
        assert_eq!(serde_json::to_value(&part).unwrap(), raw);
    }

    #[test]
    fn a_null_tool_output_survives_a_round_trip() {
        let raw = json!({"type":"tool-confirm","toolCallId":"c1","state":"output-available",
            "output":null,"toolName":"confirm"});
        let part: Part = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(part.as_tool().unwrap().output, Some(Value::Null));
        assert_eq!(serde_json::to_value(&part).unwrap(), raw);
    }

    #[test]
    fn unknown_and_malformed_parts_are_kept_verbatim() {
        let file = json!({"type":"file","mediaType":"image/png","url":"data:x"});
        let bad_tool = json!({"type":"tool-x","state":"no-such-state","toolCallId":"c"});
        for raw in [file, bad_tool] {
            let part: Part = serde_json::from_value(raw.clone()).unwrap();
            assert!(matches!(part, Part::Other(_)));
            assert_eq!(serde_json::to_value(&part).unwrap(), raw);
        }
    }

    #[test]
    fn text_and_step_parts_serialize_like_the_ai_sdk() {
        let msg = UIMessage {
            id: "a1".into(),
            role: Role::Assistant,
            metadata: None,
            parts: vec![Part::StepStart, Part::Text(TextPart::done("hi"))],
        };
        assert_eq!(
            serde_json::to_value(&msg).unwrap(),
            json!({"id":"a1","role":"assistant","parts":[{"type":"step-start"},{"type":"text","text":"hi","state":"done"}]})
        );
    }
}

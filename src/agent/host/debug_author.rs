//! Test-only (`DEBUG_TOOLS=1`) routes and schedule callbacks that drive the
//! author's storage and schedules from outside, under `…/__debug/author/`:
//! `sql` `{query, bindings}`, `kv-put` `{key, value}`, `kv-get?key=`,
//! `schedule` `{name, callback, payload, when}`, `schedules`, `cancel`
//! `{name}`, `run-turn` `{text}` (answers with the turn's result once it
//! ended), `cancel-request` `{requestId}`. A tool `kv_put {key, value}`
//! writes the key-value store from a turn. Callbacks: `record` appends its
//! payload to the key-value entry `fired`; `attempts` appends the attempt
//! number its run was given to the entry `attempts`, then waits while the
//! entry `hold_schedules` is `true`, a minute at most (so a test can
//! restart the runtime while it runs); `chat` submits its payload's `text`
//! as a user message. Each `on_chat_response` delivered is appended
//! to the entry `responses`, after waiting while the entry `hold_responses`
//! is `true` (so a test can restart the runtime while the hook runs). A
//! call `before_tool_call` allowed is then blocked, after an awaited pause
//! and a storage read, when its tool is listed in the entry `blocked_tools`.
//! A result `after_tool_call` left as it was is then replaced, after an
//! awaited pause and a storage read, by the value the entry
//! `rewritten_results` (an object by tool name) holds for its tool. A failed
//! turn `on_chat_error` left failing is sent again, after an awaited pause
//! and a storage read, while the entry `retry_errors` is `true`. A turn
//! whose custom body holds `echoBody` (and for which `before_turn` chose no
//! system prompt) gets a system prompt naming the body's `tag` and its size,
//! so a test reads from the model's request which body its turn ran with.
//! A turn whose custom body holds a `structuredOutput` schema asks for
//! structured output under it (unless `before_turn` chose a schema).
//! Bodies are read through `agent::body` (at most `DEFAULT_BODY_LIMIT`).

use serde::Deserialize;
use serde_json::{json, Value};
use worker::{Request, Response};

use crate::agent::body::{read_json, DEFAULT_BODY_LIMIT};
use crate::agent::handle::schedule_callback::{ScheduleCallback, ScheduleContext};
use crate::agent::handle::AgentHandle;
use crate::agent::storage::SqlValue;
use crate::agent::tools::context::ToolContext;
use crate::agent::tools::ServerTool;
use crate::core::{
    ChatResponse, ErrorDisposition, ScheduleWhen, ToolCall, ToolCallDecision, ToolOutcome,
};
use crate::protocol::UIMessage;

/// The path segment the routes live under.
pub const ROUTES: &str = "/__debug/author/";

#[derive(Deserialize, schemars::JsonSchema)]
pub struct KvPutInput {
    key: String,
    value: Value,
}

/// The tool `DEBUG_TOOLS=1` adds: writes the key-value store.
pub fn tools() -> Vec<ServerTool> {
    vec![ServerTool::new(
        "kv_put",
        "Test only: stores `value` under `key` in the agent's key-value store.",
        |input: KvPutInput, ctx: ToolContext| async move {
            let agent = ctx.agent.ok_or("no agent")?;
            agent
                .storage()
                .put(&input.key, &input.value)
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(json!({ "stored": input.key }))
        },
    )]
}

#[derive(Deserialize)]
struct SqlBody {
    query: String,
    #[serde(default)]
    bindings: Vec<Value>,
}

#[derive(Deserialize)]
struct KvBody {
    key: String,
    value: Value,
}

#[derive(Deserialize)]
struct ScheduleBody {
    name: String,
    callback: String,
    #[serde(default)]
    payload: Value,
    when: ScheduleWhen,
}

#[derive(Deserialize)]
struct CancelBody {
    name: String,
}

#[derive(Deserialize)]
struct RunTurnBody {
    text: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelRequestBody {
    request_id: String,
}

/// The system prompt of a turn whose body asks for it (`echoBody`): the
/// body's `tag` and how many bytes of JSON it holds.
pub fn echo_body(body: &serde_json::Map<String, Value>, config: &mut crate::core::TurnConfig) {
    if let Some(schema) = body.get("structuredOutput").filter(|s| s.is_object()) {
        let output = crate::model::StructuredOutput::new("test_output", schema.clone());
        config.structured_output.get_or_insert(output);
    }
    if config.system.is_some() || !body.contains_key("echoBody") {
        return;
    }
    let bytes = serde_json::to_string(body).map(|t| t.len()).unwrap_or(0);
    let tag = body.get("tag").cloned().unwrap_or(Value::Null);
    config.system = Some(format!("custom body tag={tag} bytes={bytes}"));
}

/// A route's JSON body (one refused is the route's error).
async fn json<T: serde::de::DeserializeOwned>(req: &mut Request) -> worker::Result<T> {
    read_json(req, DEFAULT_BODY_LIMIT)
        .await
        .map_err(|e| worker::Error::RustError(e.to_string()))
}

pub async fn serve(mut req: Request, agent: AgentHandle) -> worker::Result<Response> {
    let path = req.path();
    let Some((_, route)) = path.split_once(ROUTES) else {
        return Response::error("Not found", 404);
    };
    let storage = agent.storage();
    match route {
        "sql" => {
            let body: SqlBody = json(&mut req).await?;
            let bindings = body.bindings.into_iter().map(binding).collect();
            match storage.sql::<Value>(&body.query, bindings) {
                Ok(rows) => Response::from_json(&rows),
                Err(e) => Response::error(e.to_string(), 400),
            }
        }
        "kv-put" => {
            let body: KvBody = json(&mut req).await?;
            match storage.put(&body.key, &body.value) {
                Ok(()) => Response::ok("stored"),
                Err(e) => Response::error(e.to_string(), 400),
            }
        }
        "kv-get" => {
            let url = req.url()?;
            let key = url
                .query_pairs()
                .find(|(k, _)| k == "key")
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            match storage.get::<Value>(&key) {
                Ok(value) => Response::from_json(&json!({ "value": value })),
                Err(e) => Response::error(e.to_string(), 400),
            }
        }
        "schedule" => {
            let body: ScheduleBody = json(&mut req).await?;
            match agent.schedule(&body.name, &body.callback, body.when, body.payload) {
                Ok(row) => Response::from_json(&row),
                Err(e) => Response::error(e.to_string(), 400),
            }
        }
        "schedules" => Response::from_json(&agent.schedules()),
        "cancel" => {
            let body: CancelBody = json(&mut req).await?;
            Response::from_json(&json!({ "cancelled": agent.cancel_schedule(&body.name) }))
        }
        "run-turn" => {
            let body: RunTurnBody = json(&mut req).await?;
            let message = UIMessage::user_text("", body.text);
            match agent.run_turn(vec![message], Default::default()).await {
                Ok(result) => Response::from_json(&result),
                Err(e) => Response::error(e.to_string(), 400),
            }
        }
        "cancel-request" => {
            let body: CancelRequestBody = json(&mut req).await?;
            Response::from_json(&json!({ "cancelled": agent.cancel_request(&body.request_id) }))
        }
        _ => Response::error("Not found", 404),
    }
}

/// After the definition's `on_chat_response`: waits while `hold_responses`
/// is `true` (at most a minute), then appends the report to `responses`.
pub async fn record_response(response: &ChatResponse, agent: &AgentHandle) {
    let storage = agent.storage();
    for _ in 0..1200 {
        let held: Option<bool> = storage.get("hold_responses").ok().flatten();
        if held != Some(true) {
            break;
        }
        worker::Delay::from(std::time::Duration::from_millis(50)).await;
    }
    let mut seen: Vec<Value> = storage.get("responses").ok().flatten().unwrap_or_default();
    seen.push(json!({
        "requestId": response.request_id,
        "outcome": response.outcome,
        "answerId": response.answer_id,
    }));
    let _ = storage.put("responses", &seen);
}

fn binding(value: Value) -> SqlValue {
    match value {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Boolean(b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => SqlValue::String(s),
        other => SqlValue::String(other.to_string()),
    }
}

/// The callbacks `DEBUG_TOOLS=1` adds.
pub fn schedule_callbacks() -> Vec<ScheduleCallback> {
    vec![
        ScheduleCallback::new("record", |payload: Value, agent: AgentHandle| async move {
            let storage = agent.storage();
            let mut fired: Vec<Value> = storage.get("fired").ok().flatten().unwrap_or_default();
            fired.push(payload);
            let _ = storage.put("fired", &fired);
        }),
        ScheduleCallback::with_context("attempts", |_: Value, ctx: ScheduleContext| async move {
            let storage = ctx.agent.storage();
            let mut seen: Vec<u32> = storage.get("attempts").ok().flatten().unwrap_or_default();
            seen.push(ctx.attempt);
            let _ = storage.put("attempts", &seen);
            // At most a minute, so a test that fails leaves no run held.
            for _ in 0..600 {
                if storage.get::<bool>("hold_schedules").ok().flatten() != Some(true) {
                    break;
                }
                worker::Delay::from(std::time::Duration::from_millis(100)).await;
            }
        }),
        ScheduleCallback::new("chat", |payload: Value, agent: AgentHandle| async move {
            let text = payload["text"].as_str().unwrap_or("scheduled").to_string();
            let message = UIMessage::user_text("", text);
            let _ = agent.submit_messages(vec![message], Default::default());
        }),
    ]
}

/// The most closes `record_close` keeps.
const MAX_RECORDED_CLOSES: usize = 100;

/// Appends `conn` to the key-value entry `closes` each time a connection's
/// close is handled (so a test sees that it is handled once per socket).
pub fn record_close(agent: &AgentHandle, conn: &str) {
    let storage = agent.storage();
    let mut closes: Vec<String> = storage.get("closes").ok().flatten().unwrap_or_default();
    if closes.len() < MAX_RECORDED_CLOSES {
        closes.push(conn.to_string());
        let _ = storage.put("closes", &closes);
    }
}

/// After the definition's `before_tool_call` allowed `call`: waits a
/// moment, then blocks it when its tool is listed in `blocked_tools`.
pub async fn decide(call: &ToolCall, agent: &AgentHandle) -> Option<ToolCallDecision> {
    worker::Delay::from(std::time::Duration::from_millis(50)).await;
    let blocked: Vec<String> = agent
        .storage()
        .get("blocked_tools")
        .ok()
        .flatten()
        .unwrap_or_default();
    blocked
        .contains(&call.tool_name)
        .then(|| ToolCallDecision::Block(format!("{} is blocked by the test list", call.tool_name)))
}

/// After the definition's `after_tool_call` left `call`'s result as it was:
/// waits a moment, then replaces it with the value `rewritten_results`
/// holds for its tool, if any.
pub async fn rewrite(call: &ToolCall, agent: &AgentHandle) -> Option<ToolOutcome> {
    worker::Delay::from(std::time::Duration::from_millis(50)).await;
    let rewritten: serde_json::Map<String, Value> = agent
        .storage()
        .get("rewritten_results")
        .ok()
        .flatten()
        .unwrap_or_default();
    rewritten.get(&call.tool_name).cloned().map(Ok)
}

/// After the definition's `on_chat_error` left a turn failing: waits a
/// moment, then asks for a retry while `retry_errors` is `true`.
pub async fn retry_error(agent: &AgentHandle) -> Option<ErrorDisposition> {
    worker::Delay::from(std::time::Duration::from_millis(50)).await;
    let retry: bool = agent
        .storage()
        .get("retry_errors")
        .ok()
        .flatten()
        .unwrap_or(false);
    retry.then_some(ErrorDisposition::Retry { after_ms: 50 })
}

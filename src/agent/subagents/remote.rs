//! Another agent's (or the worker's) typed stub for an agent's submissions:
//! `AgentStub::new(&env, "SupportAgentDO", "customer-1")` reaches that
//! agent over Durable Object RPC and calls `submit_messages`,
//! `submission_status`, `cancel_submission`, `save_messages`,
//! `continue_last_turn` and `destroy` there, by Think's method names (`submitMessages`,
//! `inspectSubmission`, `cancelSubmission`, `addMessages`,
//! `continueLastTurn`): the agent is one of this crate's (its generated RPC
//! class) or a `@cloudflare/think` agent, whose answers
//! `think_submissions.rs` reads.
//!
//! `serve` is the agent's side of the older transport, a `POST
//! …/<name>/__chat-api` with the deployment's channel credential, a JSON
//! body tagged by `op`; the host answers it only when the internal fetch
//! fallback is on.

use std::future::Future;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use worker::{Env, Method, Request, Response};

use crate::protocol::gate::{self, GateError};
use crate::protocol::UIMessage;

use crate::agent::body::{read_text, BodyError, DEFAULT_BODY_LIMIT};
use crate::agent::handle::{AgentHandle, Submission, SubmitOptions};
use crate::agent::subagents::child_calls::acquire_child_call;
use crate::agent::subagents::stub::{from_js, to_js, RpcStub};
use crate::agent::subagents::think_submissions::{
    ThinkCancelResult, ThinkInspection, ThinkSubmitOptions,
};

fn rust_error(text: String) -> worker::Error {
    worker::Error::RustError(text)
}

/// One call, as sent: `{"op": "submit", …}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
enum ApiCall {
    Submit {
        messages: Vec<UIMessage>,
        #[serde(
            default,
            rename = "idempotencyKey",
            skip_serializing_if = "Option::is_none"
        )]
        idempotency_key: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        caller: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<Map<String, Value>>,
    },
    Status {
        id: String,
    },
    Cancel {
        id: String,
    },
    Save {
        messages: Vec<UIMessage>,
    },
    Continue,
}

#[derive(Debug, Serialize, Deserialize)]
struct Refusal {
    error: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Saved {
    ids: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Continued {
    request_id: String,
}

/// Answers one API call (the credential was checked by the host): 200 with
/// the result, 400 `{"error"}` for a refusal or a malformed call, 404 for
/// an unknown submission, 413 for an over-long body or one holding more
/// JSON values or nesting than the agent's limits allow (counted in its
/// text before any of it is built).
pub(crate) async fn serve(agent: AgentHandle, mut req: Request) -> worker::Result<Response> {
    if req.method() != Method::Post {
        return Response::error("POST a JSON call", 405);
    }
    // The largest call read is a tab's frame limit.
    let text = match read_text(&mut req, DEFAULT_BODY_LIMIT).await {
        Ok(text) => text,
        Err(e) => return refuse(&format!("call refused: {e}"), e.status()),
    };
    let shape = agent.limits().shape();
    let budget = gate::Budget {
        name: "call body",
        max_bytes: DEFAULT_BODY_LIMIT,
        max_values: shape.max_values,
        max_depth: shape.max_depth,
    };
    let call: ApiCall = match gate::read_json(&text, &budget) {
        Ok(call) => call,
        Err(GateError::OverBudget(e)) => return refuse(&format!("call refused: {e}"), 413),
        Err(GateError::Invalid(e)) => {
            let e = BodyError::Malformed(e);
            return refuse(&format!("malformed call: {e}"), e.status());
        }
    };
    let found = |s: Option<Submission>| match s {
        Some(s) => Response::from_json(&s),
        None => refuse("unknown submission", 404),
    };
    match call {
        ApiCall::Submit {
            messages,
            idempotency_key,
            caller,
            body,
        } => {
            // A stub's keys never meet those of the agent's own code.
            let caller = Some(format!("stub:{}", caller.unwrap_or_default()));
            let options = SubmitOptions {
                idempotency_key,
                caller,
                body,
            };
            match agent.submit_messages(messages, options) {
                Ok(s) => Response::from_json(&s),
                Err(e) => refuse(&e.0, refusal_status(&e)),
            }
        }
        ApiCall::Status { id } => found(agent.submission_status(&id)),
        ApiCall::Cancel { id } => found(agent.cancel_submission(&id)),
        ApiCall::Save { messages } => match agent.save_messages(messages) {
            Ok(ids) => Response::from_json(&Saved { ids }),
            Err(e) => refuse(&e.0, 400),
        },
        ApiCall::Continue => match agent.continue_last_turn_from_outside() {
            Ok(request_id) => Response::from_json(&Continued { request_id }),
            Err(e) => refuse(&e.0, refusal_status(&e)),
        },
    }
}

/// 429 for a refusal for want of request rate, 400 for any other.
fn refusal_status(error: &crate::core::SubmitError) -> u16 {
    if error.is_rate_limited() {
        429
    } else {
        400
    }
}

fn refuse(error: &str, status: u16) -> worker::Result<Response> {
    Ok(Response::from_json(&Refusal {
        error: error.to_string(),
    })?
    .with_status(status))
}

/// A typed stub for agent `binding`/`name` (see the module header). Each
/// call's `Err` is the agent's refusal text or a transport failure.
pub struct AgentStub {
    stub: RpcStub,
}

impl AgentStub {
    /// The agent `name` of Durable Object binding `binding` (its class
    /// binding, e.g. `"SupportAgentDO"`, which may name a class of another
    /// worker); `name` follows the agent-name rule.
    pub fn new(env: &Env, binding: &str, name: &str) -> worker::Result<AgentStub> {
        Ok(AgentStub {
            stub: RpcStub::new(env, binding, name)?,
        })
    }

    /// `SubmitOptions::body` reaches the agent as Think's `metadata` (this
    /// crate's agents read it as the custom body); `caller` is not sent: the
    /// agent keeps the keys of RPC callers apart from its own.
    pub fn submit_messages(
        &self,
        messages: Vec<UIMessage>,
        options: SubmitOptions,
    ) -> impl Future<Output = worker::Result<Submission>> + '_ {
        // A submission starts a turn there: it counts as a child call.
        let slot = acquire_child_call();
        async move {
            let slot = slot.map_err(rust_error)?;
            let think = ThinkSubmitOptions {
                idempotency_key: options.idempotency_key,
                metadata: options.body,
                // Outside any turn the submitted turn is the first hop.
                delegation_depth: Some(slot.as_ref().map_or(1, |s| s.child_depth())),
            };
            let _slot = slot;
            let answer = self
                .stub
                .call("submitMessages", &[to_js(&messages)?, to_js(&think)?])
                .await?;
            let inspection: ThinkInspection = from_js(&answer).map_err(rust_error)?;
            inspection.into_submission().map_err(rust_error)
        }
    }

    /// `Ok(None)`: the agent does not know the submission.
    pub async fn submission_status(&self, id: &str) -> worker::Result<Option<Submission>> {
        let answer = self.stub.call("inspectSubmission", &[id.into()]).await?;
        let inspection: Option<ThinkInspection> = from_js(&answer).map_err(rust_error)?;
        inspection
            .map(ThinkInspection::into_submission)
            .transpose()
            .map_err(rust_error)
    }

    /// `Ok(None)`: the agent does not know the submission.
    pub async fn cancel_submission(&self, id: &str) -> worker::Result<Option<Submission>> {
        let answer = self.stub.call("cancelSubmission", &[id.into()]).await?;
        let result: ThinkCancelResult = from_js(&answer).map_err(rust_error)?;
        result.into_submission().map_err(rust_error)
    }

    /// Think's `addMessages`: stored and shown, no model turn. A message
    /// without an id gets one here; returns the ids.
    pub async fn save_messages(&self, mut messages: Vec<UIMessage>) -> worker::Result<Vec<String>> {
        for message in messages.iter_mut().filter(|m| m.id.is_empty()) {
            message.id = crate::agent::ids::random_token(16);
        }
        let ids = messages.iter().map(|m| m.id.clone()).collect();
        self.stub.call("addMessages", &[to_js(&messages)?]).await?;
        Ok(ids)
    }

    /// Think's `continueLastTurn()`: returns the continuation's request id
    /// once it ended.
    pub fn continue_last_turn(&self) -> impl Future<Output = worker::Result<String>> + '_ {
        let slot = acquire_child_call();
        async move {
            let _slot = slot.map_err(rust_error)?;
            let answer = self.stub.call("continueLastTurn", &[]).await?;
            let continued: Continued = from_js(&answer).map_err(rust_error)?;
            Ok(continued.request_id)
        }
    }

    /// Any other method of the agent's stub by name, such as the author's
    /// own (`AgentDefinition::rpc_methods`): each argument crosses as JSON,
    /// and the answer is read through the gate (`gate::AGENT_REPLY`) as `R`.
    pub async fn call<R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        args: &[Value],
    ) -> worker::Result<R> {
        let args = args.iter().map(to_js).collect::<worker::Result<Vec<_>>>()?;
        let answer = self.stub.call(method, &args).await?;
        from_js(&answer).map_err(rust_error)
    }

    /// `destroy()`: the agent erases everything it holds and closes its
    /// sockets (see `AgentHandle::destroy`); the next call reaches a new,
    /// empty agent of the same name.
    pub async fn destroy(&self) -> worker::Result<()> {
        self.stub.call("destroy", &[]).await?;
        Ok(())
    }
}

//! Another agent's (or the worker's) typed stub for an agent's submissions:
//! `AgentStub::new(&env, "SupportAgentDO", "customer-1")` reaches that
//! agent's Durable Object over its namespace and calls `submit_messages`,
//! `submission_status`, `cancel_submission`, `save_messages` and
//! `continue_last_turn` there, with the same meaning as on an `AgentHandle`.
//! Transport: one `POST …/<name>/__chat-api` per call, a JSON body tagged by
//! `op`, carrying the deployment's channel credential (the same rule as a
//! parent's sub-agent channel, `channel_auth.rs`); the worker's entry
//! refuses the path from outside. The agent's side is `serve`.
//!
//! `AgentStub::rpc` reaches instead any class with Think's submission
//! methods over Durable Object RPC (`submitMessages`, `inspectSubmission`,
//! `cancelSubmission`), such as a `@cloudflare/think` agent in another
//! worker (`think_submissions.rs` reads its answers); `save_messages` and
//! `continue_last_turn` have no RPC form yet and fail on such a stub.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use worker::{Env, Headers, Method, Request, RequestInit, Response};

use crate::protocol::UIMessage;

use super::body::{read_json, BodyError, DEFAULT_BODY_LIMIT};
use super::channel_auth::{channel_target, CHANNEL_AUTH_HEADER};
use super::handle::{AgentHandle, Submission, SubmitOptions};
use super::rpc_stub::{from_js, to_js};
use super::think_submissions::{ThinkCancelResult, ThinkInspection, ThinkSubmitOptions};

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
/// an unknown submission, 413 for an over-long body.
pub(crate) async fn serve(agent: AgentHandle, mut req: Request) -> worker::Result<Response> {
    if req.method() != Method::Post {
        return Response::error("POST a JSON call", 405);
    }
    // The largest call read is a tab's frame limit.
    let call: ApiCall = match read_json(&mut req, DEFAULT_BODY_LIMIT).await {
        Ok(call) => call,
        Err(e @ BodyError::Malformed(_)) => return refuse(&format!("malformed call: {e}"), 400),
        Err(e) => return refuse(&format!("call refused: {e}"), e.status()),
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
                Err(e) => refuse(&e.0, 400),
            }
        }
        ApiCall::Status { id } => found(agent.submission_status(&id)),
        ApiCall::Cancel { id } => found(agent.cancel_submission(&id)),
        ApiCall::Save { messages } => match agent.save_messages(messages) {
            Ok(ids) => Response::from_json(&Saved { ids }),
            Err(e) => refuse(&e.0, 400),
        },
        ApiCall::Continue => match agent.continue_last_turn() {
            Ok(request_id) => Response::from_json(&Continued { request_id }),
            Err(e) => refuse(&e.0, 400),
        },
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
    transport: Transport,
}

enum Transport {
    Fetch {
        stub: worker::Stub,
        url: String,
        credential: String,
    },
    Rpc(super::rpc_stub::RpcStub),
}

impl AgentStub {
    /// The agent `name` of Durable Object binding `binding` (its class
    /// binding, e.g. `"SupportAgentDO"`); `name` follows the agent-name rule.
    pub fn new(env: &Env, binding: &str, name: &str) -> worker::Result<AgentStub> {
        let (stub, credential) = channel_target(env, binding, name)?;
        Ok(AgentStub {
            transport: Transport::Fetch {
                credential,
                stub,
                url: crate::routing::api_url(binding, name),
            },
        })
    }

    /// The agent `name` of binding `binding` over Durable Object RPC, by
    /// Think's method names (see the module header). `SubmitOptions::caller`
    /// and `body` have no counterpart there and are not sent.
    pub fn rpc(env: &Env, binding: &str, name: &str) -> worker::Result<AgentStub> {
        Ok(AgentStub {
            transport: Transport::Rpc(super::rpc_stub::RpcStub::new(env, binding, name)?),
        })
    }

    pub async fn submit_messages(
        &self,
        messages: Vec<UIMessage>,
        options: SubmitOptions,
    ) -> worker::Result<Submission> {
        if let Transport::Rpc(stub) = &self.transport {
            let think = ThinkSubmitOptions {
                idempotency_key: options.idempotency_key,
                metadata: None,
            };
            let answer = stub
                .call("submitMessages", &[to_js(&messages)?, to_js(&think)?])
                .await?;
            let inspection: ThinkInspection = from_js(&answer).map_err(rust_error)?;
            return inspection.into_submission().map_err(rust_error);
        }
        self.call(&ApiCall::Submit {
            messages,
            idempotency_key: options.idempotency_key,
            caller: options.caller,
            body: options.body,
        })
        .await
    }

    /// `Ok(None)`: the agent does not know the submission.
    pub async fn submission_status(&self, id: &str) -> worker::Result<Option<Submission>> {
        if let Transport::Rpc(stub) = &self.transport {
            let answer = stub.call("inspectSubmission", &[id.into()]).await?;
            let inspection: Option<ThinkInspection> = from_js(&answer).map_err(rust_error)?;
            return inspection
                .map(ThinkInspection::into_submission)
                .transpose()
                .map_err(rust_error);
        }
        self.call_optional(&ApiCall::Status { id: id.to_string() })
            .await
    }

    pub async fn cancel_submission(&self, id: &str) -> worker::Result<Option<Submission>> {
        if let Transport::Rpc(stub) = &self.transport {
            let answer = stub.call("cancelSubmission", &[id.into()]).await?;
            let result: ThinkCancelResult = from_js(&answer).map_err(rust_error)?;
            return result.into_submission().map_err(rust_error);
        }
        self.call_optional(&ApiCall::Cancel { id: id.to_string() })
            .await
    }

    pub async fn save_messages(&self, messages: Vec<UIMessage>) -> worker::Result<Vec<String>> {
        let saved: Saved = self.call(&ApiCall::Save { messages }).await?;
        Ok(saved.ids)
    }

    pub async fn continue_last_turn(&self) -> worker::Result<String> {
        let continued: Continued = self.call(&ApiCall::Continue).await?;
        Ok(continued.request_id)
    }

    async fn call_optional<T: for<'de> Deserialize<'de>>(
        &self,
        call: &ApiCall,
    ) -> worker::Result<Option<T>> {
        let mut response = self.send(call).await?;
        match response.status_code() {
            404 => Ok(None),
            200 => response.json().await.map(Some),
            _ => Err(refusal_of(&mut response).await),
        }
    }

    async fn call<T: for<'de> Deserialize<'de>>(&self, call: &ApiCall) -> worker::Result<T> {
        let mut response = self.send(call).await?;
        match response.status_code() {
            200 => response.json().await,
            _ => Err(refusal_of(&mut response).await),
        }
    }

    async fn send(&self, call: &ApiCall) -> worker::Result<Response> {
        let Transport::Fetch {
            stub,
            url,
            credential,
        } = &self.transport
        else {
            return Err(rust_error(
                "this call has no RPC form on this stub".to_string(),
            ));
        };
        let body =
            serde_json::to_string(call).map_err(|e| worker::Error::RustError(e.to_string()))?;
        let headers = Headers::new();
        headers.set("content-type", "application/json")?;
        headers.set(CHANNEL_AUTH_HEADER, credential)?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_body(Some(wasm_bindgen::JsValue::from_str(&body)));
        stub.fetch_with_request(Request::new_with_init(url, &init)?)
            .await
    }
}

async fn refusal_of(response: &mut Response) -> worker::Error {
    let status = response.status_code();
    let text = match response.json::<Refusal>().await {
        Ok(refusal) => refusal.error,
        Err(_) => format!("the agent answered {status}"),
    };
    worker::Error::RustError(text)
}

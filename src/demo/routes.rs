//! The demo agent's HTTP routes: submitting a message without a socket,
//! scheduling the author's alarm, a broadcast announcement, erasure behind the
//! operator's token, its MCP server routes and a submission's status or
//! cancellation.

use serde::Deserialize;
use worker::{Method, Request, Response};

use crate::agent::body::{read_json_typed, refusal};
use crate::agent::{AgentHandle, SubmitOptions};
use crate::protocol::UIMessage;

/// The most a submit body may hold (its text is one message).
const SUBMIT_BODY_LIMIT: usize = 256 * 1024;
/// An announcement is a short text and a tag.
const ANNOUNCE_BODY_LIMIT: usize = 4 * 1024;
/// A schedule body is a number.
const SCHEDULE_BODY_LIMIT: usize = 1024;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Schedule {
    in_ms: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Submit {
    text: String,
    idempotency_key: Option<String>,
}

pub async fn serve(
    mut req: Request,
    agent: AgentHandle,
    mcp_admin_token: Option<&str>,
) -> worker::Result<Option<Response>> {
    let path = req.path();
    let post = req.method() == Method::Post;
    if post && path.ends_with("/submit") {
        let submit: Submit = match read_json_typed(&mut req, SUBMIT_BODY_LIMIT).await {
            Ok(submit) => submit,
            Err(e) => return refusal(&e).map(Some),
        };
        let options = SubmitOptions {
            idempotency_key: submit.idempotency_key,
            // Anyone who passes `authorize` reaches this route: its keys
            // are kept apart from the agent's own.
            caller: Some("http".into()),
            ..Default::default()
        };
        // An empty id: the agent gives the message one.
        let message = UIMessage::user_text("", submit.text);
        return match agent.submit_messages(vec![message], options) {
            Ok(submission) => Ok(Some(Response::from_json(&submission)?.with_status(202))),
            // A named caller counts toward RATE_LIMIT_PER_AGENT.
            Err(e) if e.is_rate_limited() => Response::error(e.to_string(), 429).map(Some),
            Err(e) => Response::error(e.to_string(), 400).map(Some),
        };
    }
    if post && path.ends_with("/schedule") {
        let schedule: Schedule = match read_json_typed(&mut req, SCHEDULE_BODY_LIMIT).await {
            Ok(schedule) => schedule,
            Err(e) => return refusal(&e).map(Some),
        };
        let at = agent.now_ms().saturating_add(schedule.in_ms);
        agent.schedule_alarm(Some(at));
        return Response::from_json(&serde_json::json!({ "at": at })).map(Some);
    }
    if post && path.ends_with("/announce") {
        let announcement: super::connections::Announcement =
            match read_json_typed(&mut req, ANNOUNCE_BODY_LIMIT).await {
                Ok(announcement) => announcement,
                Err(e) => return refusal(&e).map(Some),
            };
        if let Err(e) = announcement.check() {
            return Response::error(e, 400).map(Some);
        }
        let sent = super::connections::announce_now(&agent, &announcement);
        return Response::from_json(&serde_json::json!({ "sentTo": sent })).map(Some);
    }
    if post && path.ends_with("/destroy") {
        let what = "Erasing the agent";
        if let Some(refused) = super::mcp_routes::refuse_non_admin(&req, mcp_admin_token, what)? {
            return Ok(Some(refused));
        }
        return match agent.destroy().await {
            Ok(()) => Response::ok("destroyed").map(Some),
            Err(e) => Response::error(e, 500).map(Some),
        };
    }
    if let Some(answer) = super::mcp_routes::serve(&mut req, &path, &agent, mcp_admin_token).await?
    {
        return Ok(Some(answer));
    }
    let Some((_, rest)) = path.split_once("/submissions/") else {
        return Ok(None);
    };
    let found = match rest.strip_suffix("/cancel") {
        Some(id) if post => agent.cancel_submission(id),
        Some(_) => return Ok(None),
        None => agent.submission_status(rest),
    };
    match found {
        Some(submission) => Response::from_json(&submission).map(Some),
        None => Response::error("unknown submission", 404).map(Some),
    }
}

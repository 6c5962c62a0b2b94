//! The agent as a Durable Object RPC target: the methods a caller reaches on
//! the agent's stub, named and shaped as `@cloudflare/think`'s, so code
//! written against a Think child works against this agent. The bridge class
//! the build generates (`scripts/rpc-bridge.mjs`) extends `DurableObject`
//! and forwards each method to the Rust class's `durableChatRpc(method,
//! args)`, which `chat_agent!` defines and which lands in [`call`]. Every
//! method feeds the core's existing paths: `chat` is a parent's channel turn
//! (`chat.rs`), the rest are the `AgentHandle`'s turns, submissions and
//! messages (`turns.rs`, `submissions.rs`, `messages.rs`). A name that is
//! none of them is the author's own method (`author.rs`), whose names the
//! bridge class reads from `durableChatRpcMethods()`. `destroy` erases the
//! agent.

use std::rc::Rc;

use js_sys::{Array, Promise};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::future_to_promise;

use crate::agent::host::AgentHost;

mod author;
mod chat;
mod js;
mod messages;
mod submissions;
mod turns;

pub use author::names as author_method_names;

/// Runs RPC method `method` with `args` on the agent (`Err`: it failed to
/// start); the promise rejects with an `Error` for an unknown method or a
/// refused call.
pub fn call(host: &Result<Rc<AgentHost>, String>, method: &str, args: Array) -> Promise {
    let host = match host {
        Ok(host) => host.clone(),
        Err(e) => return js::rejected(&format!("agent failed to start: {e}")),
    };
    let method = method.to_string();
    // After the definition's `on_start`, as every entry point.
    future_to_promise(async move {
        host.ready().await;
        wasm_bindgen_futures::JsFuture::from(dispatch(host, &method, args)).await
    })
}

fn dispatch(host: Rc<AgentHost>, method: &str, args: Array) -> Promise {
    host.learn_name_from_id();
    let arg = |i: u32| args.get(i);
    match method {
        "chat" => future_to_promise(chat::chat(host, arg(0), arg(1), arg(2))),
        "cancelChat" => settled(chat::cancel_chat(&host, &arg(0))),
        "cancelAllChats" => settled(turns::cancel_all(&host)),
        "runTurn" => future_to_promise(turns::run_turn(host, arg(0))),
        "submitMessages" => settled(submissions::submit(&host, &arg(0), &arg(1))),
        "inspectSubmission" => settled(submissions::inspect(&host, &arg(0))),
        "waitForSubmission" => future_to_promise(turns::wait(host, arg(0), arg(1))),
        "listSubmissions" => settled(submissions::list(&host, &arg(0))),
        "cancelSubmission" => settled(submissions::cancel(&host, &arg(0))),
        "deleteSubmission" => settled(submissions::delete(&host, &arg(0))),
        "deleteSubmissions" => settled(submissions::delete_many(&host, &arg(0))),
        "getMessages" => settled(messages::get(&host)),
        "clearMessages" => settled(messages::clear(&host)),
        "addMessages" => settled(messages::add(&host, &arg(0), &arg(1))),
        "saveMessages" => future_to_promise(messages::save(host, arg(0), arg(1))),
        "continueLastTurn" => future_to_promise(messages::continue_last(host)),
        "destroy" => future_to_promise(destroy(host)),
        other => future_to_promise(author::call(host, other.to_string(), args)),
    }
}

/// `destroy()` (as an `agents` Agent's): everything the agent holds is
/// erased and its sockets closed (`AgentHandle::destroy`); resolves once
/// the rows are gone, and the object is reset right after.
async fn destroy(host: Rc<AgentHost>) -> Result<JsValue, JsValue> {
    host.handle().destroy().await.map_err(|e| js::error(&e))?;
    Ok(JsValue::UNDEFINED)
}

/// The promise of a call answered at once.
fn settled(result: Result<JsValue, JsValue>) -> Promise {
    match result {
        Ok(value) => Promise::resolve(&value),
        Err(error) => Promise::reject(&error),
    }
}

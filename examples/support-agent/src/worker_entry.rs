//! The worker's fetch entry: agent requests go to the Durable Object named by the path; the
//! internal sub-agent channel path is refused from outside; anything else is 404.

#[worker::event(fetch)]
async fn fetch(
    req: worker::Request,
    env: worker::Env,
    _ctx: worker::Context,
) -> worker::Result<worker::Response> {
    use durable_chat::routing::{is_channel_path, route, Route};
    match route(&req.path(), &["SupportAgentDO"]) {
        // Refuse `…/__chat-channel` from outside (sub-agent channels are internal) and check
        // access here; then forward to the Durable Object named by the path.
        Route::Agent { binding, name } if !is_channel_path(&req.path()) => {
            env.durable_object(binding)?
                .id_from_name(&name)?
                .get_stub()?
                .fetch_with_request(req)
                .await
        }
        Route::Agent { .. } | Route::BadAgentPath => {
            worker::Response::error("Invalid request", 400)
        }
        Route::NotAgent => worker::Response::error("Not found", 404),
    }
}

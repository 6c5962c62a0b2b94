//! The demo's streaming callable: `ticks(n, everyMs)` sends `1`, `2`, … `n`
//! to its caller, one every `everyMs` (the client's `onChunk`), and answers
//! `{"ticks": n}` last (`onDone`). Before each chunk it records how far it
//! got under the key-value entry `ticks-sent`, so it can be seen that a
//! stream whose caller left stops at once.

use serde_json::{json, Value};

use crate::agent::{CallContext, CallStream, Callable};

/// The most ticks one call sends.
const MAX_TICKS: u32 = 1000;

pub fn callable() -> Callable {
    Callable::streaming("ticks", ticks)
}

/// `n` and the pause in ms, kept within reason.
fn bounded(n: u32, every_ms: u32) -> Result<(u32, u64), String> {
    if n == 0 || n > MAX_TICKS {
        return Err(format!("n must be between 1 and {MAX_TICKS}"));
    }
    Ok((n, u64::from(every_ms.clamp(10, 10_000))))
}

async fn ticks(
    (n, every_ms): (u32, u32),
    stream: CallStream,
    ctx: CallContext,
) -> Result<Value, String> {
    let (n, every_ms) = bounded(n, every_ms)?;
    for tick in 1..=n {
        pause(every_ms).await;
        ctx.agent
            .storage()
            .put("ticks-sent", &tick)
            .map_err(|e| e.to_string())?;
        stream.send(tick)?;
    }
    Ok(json!({ "ticks": n }))
}

/// Waits `ms` on the runtime's timer.
#[cfg(target_arch = "wasm32")]
async fn pause(ms: u64) {
    worker::Delay::from(std::time::Duration::from_millis(ms)).await;
}

/// Natively there is no timer to wait on: the ticks go out at once.
#[cfg(not(target_arch = "wasm32"))]
async fn pause(_ms: u64) {}

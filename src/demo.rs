//! The demo agent of this repository: a weather tool and a file deletion that
//! needs approval, bound as the `ChatAgent` Durable Object class.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent::{AgentDefinition, ServerTool};
use crate::core::ApprovalRule;

pub struct DemoAgent;

#[derive(Deserialize, JsonSchema)]
pub struct WeatherInput {
    /// City name, e.g. "Paris".
    pub city: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Weather {
    pub city: String,
    pub temp_c: i32,
}

#[derive(Deserialize, JsonSchema)]
pub struct DeleteFileInput {
    /// Path of the file to delete.
    pub path: String,
}

impl AgentDefinition for DemoAgent {
    fn system_prompt(&self) -> String {
        "You are a helpful assistant in a demo chat. Use the tools when they help.".to_string()
    }

    fn tools(&self) -> Vec<ServerTool> {
        vec![
            ServerTool::new(
                "get_weather",
                "Current weather for a city.",
                |input: WeatherInput| async move {
                    Ok::<_, String>(Weather {
                        city: input.city,
                        temp_c: 21,
                    })
                },
            ),
            ServerTool::new(
                "delete_file",
                "Delete a file by path.",
                |input: DeleteFileInput| async move {
                    Ok::<_, String>(serde_json::json!({"deleted": input.path}))
                },
            )
            .needs_approval(ApprovalRule::Always),
        ]
    }
}

#[cfg(target_arch = "wasm32")]
crate::chat_agent!(ChatAgent, DemoAgent, "chat-agent");

//! What a `tools/call` result becomes for the model and the transcript: a
//! tool error (`isError`) is an error text; structured content is the
//! output as it is; otherwise the content blocks become text — text as it
//! is, images and audio as a line saying what they were (the model reads
//! text only), embedded resources as their text or a line naming them, and
//! resource links as a line with their URI.

use serde_json::Value;

/// The largest number of content blocks read from one result.
const MAX_BLOCKS: usize = 64;

/// The outcome of one call, as a server tool's would be.
pub fn tool_outcome(result: &Value) -> Result<Value, String> {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let text = content_text(result.get("content"));
    if is_error {
        return Err(if text.is_empty() {
            "The tool failed.".to_string()
        } else {
            text
        });
    }
    match result.get("structuredContent") {
        Some(structured) if !structured.is_null() => Ok(structured.clone()),
        _ => Ok(Value::String(text)),
    }
}

/// The text of a result's content blocks, one paragraph each.
fn content_text(content: Option<&Value>) -> String {
    let Some(blocks) = content.and_then(Value::as_array) else {
        return String::new();
    };
    blocks
        .iter()
        .take(MAX_BLOCKS)
        .filter_map(block_text)
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn block_text(block: &Value) -> Option<String> {
    let str_of = |key: &str| block.get(key).and_then(Value::as_str);
    match str_of("type")? {
        "text" => str_of("text").map(str::to_string),
        kind @ ("image" | "audio") => {
            let mime = str_of("mimeType").unwrap_or("unknown type");
            let bytes = str_of("data").map_or(0, |d| d.len() / 4 * 3);
            Some(format!("[{kind} ({mime}), about {bytes} bytes, not shown]"))
        }
        "resource" => {
            let resource = block.get("resource")?;
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => Some(format!("[resource {uri}]\n{text}")),
                None => {
                    let mime = resource
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .unwrap_or("binary");
                    Some(format!("[resource {uri} ({mime}), binary, not shown]"))
                }
            }
        }
        "resource_link" => {
            let uri = str_of("uri").unwrap_or("");
            let name = str_of("name").unwrap_or(uri);
            let description = str_of("description")
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            Some(format!("[resource link {name} <{uri}>{description}]"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_blocks_become_the_output_text() {
        let result = json!({"content":[{"type":"text","text":"3"},{"type":"text","text":"done"}]});
        assert_eq!(tool_outcome(&result), Ok(json!("3\n\ndone")));
    }

    #[test]
    fn structured_content_is_the_output() {
        let result =
            json!({"content":[{"type":"text","text":"{\"sum\":3}"}],"structuredContent":{"sum":3}});
        assert_eq!(tool_outcome(&result), Ok(json!({"sum": 3})));
    }

    #[test]
    fn a_tool_error_is_an_error_text() {
        let result = json!({"isError":true,"content":[{"type":"text","text":"division by zero"}]});
        assert_eq!(tool_outcome(&result), Err("division by zero".into()));
        assert_eq!(
            tool_outcome(&json!({"isError":true})),
            Err("The tool failed.".into())
        );
    }

    #[test]
    fn images_and_resources_become_lines_the_model_can_read() {
        let result = json!({"content":[
            {"type":"image","mimeType":"image/png","data":"AAAA"},
            {"type":"resource","resource":{"uri":"file:///a.txt","text":"hello"}},
            {"type":"resource","resource":{"uri":"file:///b.bin","blob":"AAAA","mimeType":"application/zip"}},
            {"type":"resource_link","uri":"https://x/y","name":"y"},
            {"type":"mystery"}
        ]});
        let Ok(Value::String(text)) = tool_outcome(&result) else {
            panic!("text expected")
        };
        assert_eq!(
            text,
            "[image (image/png), about 3 bytes, not shown]\n\n[resource file:///a.txt]\nhello\n\n\
             [resource file:///b.bin (application/zip), binary, not shown]\n\n[resource link y <https://x/y>]"
        );
    }
}

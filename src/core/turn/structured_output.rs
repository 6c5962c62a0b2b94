//! A turn that asked for structured output (`TurnConfig::structured_output`)
//! has its answer checked when it completes: the last text the model wrote
//! is read as JSON (through the gate; a ```json fence around it is
//! allowed) and checked against the schema (`data::schema_check`). An
//! answer that is not JSON, or does not follow the schema, ends the turn
//! failed with an error naming where it went wrong; what streamed is kept.

use serde_json::Value;

use crate::core::data::schema_check::{self, read_output};
use crate::core::Core;

impl Core {
    /// `Err(text)`: the active turn asked for structured output and its
    /// answer does not follow the schema.
    pub(in crate::core::turn) fn check_structured_output(&self) -> Result<(), String> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let Some(output) = &active.settings.model.structured_output else {
            return Ok(());
        };
        let value: Value = read_output(active.message())?;
        schema_check::check(&value, &output.schema).map_err(|reason| {
            format!(
                "the answer does not follow the schema `{}`: {reason}",
                output.name
            )
        })
    }
}

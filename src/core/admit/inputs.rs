//! What the tabs last said about every turn: the client tools they offer
//! (schemas the browser runs) and the custom body of their requests. Stored
//! as config rows so a recovered or continued turn sees them too; replaced
//! only through `replace_*`, which say whether a row must be written.

use serde_json::{Map, Value};

use crate::protocol::ClientToolSchema;

#[derive(Debug, Default)]
pub struct TabInputs {
    client_tools: Vec<ClientToolSchema>,
    body: Map<String, Value>,
}

impl TabInputs {
    pub fn restored(client_tools: Vec<ClientToolSchema>, body: Map<String, Value>) -> Self {
        TabInputs { client_tools, body }
    }

    pub fn client_tools(&self) -> &[ClientToolSchema] {
        &self.client_tools
    }

    pub fn body(&self) -> &Map<String, Value> {
        &self.body
    }

    pub fn replace_client_tools(&mut self, tools: Vec<ClientToolSchema>) {
        self.client_tools = tools;
    }

    pub fn replace_body(&mut self, body: Map<String, Value>) {
        self.body = body;
    }

    /// The history was cleared: the next request says again.
    pub fn reset(&mut self) {
        self.client_tools.clear();
        self.body.clear();
    }
}

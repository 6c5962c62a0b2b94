//! `before_step`: what the author's hook sees before each model step of a
//! turn (`StepContext`) and what it may change for that step only
//! (`StepConfig`: the model, the system prompt, the tools offered, the tool
//! choice). It is synchronous, called where the step begins: a call sent
//! again after a failure keeps the step's choice, and the steps of a turn
//! recovered after an eviction ask again.

use std::rc::Rc;

use crate::model::{ToolChoice, Usage};

use crate::core::vocab::turn_config::{TurnSettings, TurnTrigger};

/// What `before_step` sees.
#[derive(Debug, Clone, PartialEq)]
pub struct StepContext {
    pub request_id: String,
    pub trigger: TurnTrigger,
    /// The number of the step about to start, from 1.
    pub step: u32,
    /// The model the turn asks (the agent's, or what `before_turn` chose).
    pub model: String,
    /// The names of the tools the model called in the previous step (empty
    /// for the first step).
    pub previous_tool_calls: Vec<String>,
    /// The tokens the turn's steps used so far.
    pub usage: Option<Usage>,
}

/// What `before_step` changes for one step (`None`: the turn's setting).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepConfig {
    pub model: Option<String>,
    pub system: Option<String>,
    /// Offer only the tools with these names in this step (of those the
    /// turn offers).
    pub tools: Option<Vec<String>>,
    pub tool_choice: Option<ToolChoice>,
}

impl StepConfig {
    /// The turn's settings with this step's changes.
    pub fn applied_to(self, turn: &TurnSettings) -> TurnSettings {
        let mut settings = turn.clone();
        if let Some(model) = self.model.filter(|m| !m.trim().is_empty()) {
            settings.model.model = model;
        }
        if let Some(system) = self.system {
            settings.system = system;
        }
        if let Some(names) = self.tools {
            settings.step_tools = Some(names);
        }
        if self.tool_choice.is_some() {
            settings.tool_choice = self.tool_choice;
        }
        settings
    }
}

pub type BeforeStep = Rc<dyn Fn(&StepContext) -> StepConfig>;

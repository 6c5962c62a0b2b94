//! A server tool as the core sees it (schema, approval rule, whether a
//! client tool may replace it, its deadline) and the rule that decides when
//! a person must approve a call.

use std::fmt;
use std::rc::Rc;

use serde_json::Value;

/// When a server tool must be approved by a person before it runs.
#[derive(Clone, Default)]
pub enum ApprovalRule {
    #[default]
    Never,
    Always,
    /// Decided from the call's input.
    When(Rc<dyn Fn(&Value) -> bool>),
}

impl ApprovalRule {
    pub fn required_for(&self, input: &Value) -> bool {
        match self {
            ApprovalRule::Never => false,
            ApprovalRule::Always => true,
            ApprovalRule::When(rule) => rule(input),
        }
    }
}

/// Two rules are the same when they are the same kind, and a rule decided
/// from the input is the same closure.
impl PartialEq for ApprovalRule {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ApprovalRule::Never, ApprovalRule::Never) => true,
            (ApprovalRule::Always, ApprovalRule::Always) => true,
            (ApprovalRule::When(a), ApprovalRule::When(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl fmt::Debug for ApprovalRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ApprovalRule::Never => "Never",
            ApprovalRule::Always => "Always",
            ApprovalRule::When(_) => "When(..)",
        })
    }
}

/// A server tool as the core sees it: its schema, approval rule, whether a
/// client tool of the same name may replace it, and how long a run may take.
/// The host holds the code that runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub approval: ApprovalRule,
    /// `Some(false)`: a same-named client tool never replaces this tool.
    /// `None`: replaceable unless it needs approval (see [`ToolSpec::is_overridable`]).
    pub overridable: Option<bool>,
    /// A run still going after this long ends as a tool error the model
    /// reads (`None`: the settings' `tool_timeout_ms`).
    pub timeout_ms: Option<u64>,
    /// Offered only in turns whose `before_turn` adds it (`TurnConfig::add_tools`).
    pub opt_in: bool,
}

impl ToolSpec {
    pub fn new(name: &str, description: &str, parameters: Value) -> Self {
        ToolSpec {
            name: name.to_string(),
            description: description.to_string(),
            parameters,
            approval: ApprovalRule::Never,
            overridable: None,
            timeout_ms: None,
            opt_in: false,
        }
    }

    /// Offered only in turns whose `before_turn` adds it by name.
    pub fn opt_in(mut self) -> Self {
        self.opt_in = true;
        self
    }

    pub fn needs_approval(mut self, rule: ApprovalRule) -> Self {
        self.approval = rule;
        self
    }

    /// A client tool of the same name never replaces this one: the model
    /// keeps seeing the server tool and its calls run here.
    pub fn not_overridable(mut self) -> Self {
        self.overridable = Some(false);
        self
    }

    /// A client tool of the same name replaces this one, even if it needs approval.
    pub fn overridable(mut self) -> Self {
        self.overridable = Some(true);
        self
    }

    /// The deadline of one run of this tool, in ms.
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = Some(ms);
        self
    }

    /// Whether a same-named client tool replaces this tool. A tool that can
    /// need approval is not replaceable unless marked `overridable()`: a
    /// browser-answered copy would skip the person's approval.
    pub fn is_overridable(&self) -> bool {
        self.overridable
            .unwrap_or(matches!(self.approval, ApprovalRule::Never))
    }
}

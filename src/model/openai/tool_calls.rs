//! Reassembles streamed tool calls from `delta.tool_calls[]` fragments into
//! `ToolCallStarted` / `ToolCallArgumentsDelta` events.
//!
//! Providers disagree on details, so the rules are forgiving:
//! * a call is keyed by its `index`; without one, a known `id` finds its call,
//!   a new `id` starts a new call, and otherwise the position in the array is used;
//! * if a delta reuses an index but brings a different real `id`, it is a new
//!   call (some servers send every parallel call at index 0) and gets a fresh index;
//! * `ToolCallStarted` waits until the function name is known; arguments seen
//!   before that are held back and released right after it;
//! * a missing `id` is minted as `call_<index>`.

use crate::model::{ModelError, ModelEvent};

/// More calls than this in one reply is treated as a broken stream; it also
/// keeps the linear slot lookups cheap.
const MAX_TOOL_CALLS: usize = 512;

/// One tool-call fragment, already lifted out of the wire JSON.
#[derive(Debug, Default)]
pub(super) struct ToolCallFragment {
    pub(super) index: Option<u32>,
    pub(super) id: Option<String>,
    pub(super) name: Option<String>,
    pub(super) arguments: Option<String>,
}

#[derive(Debug)]
struct ToolCallSlot {
    /// The index we report in events.
    index: u32,
    /// The index the provider uses for this call (lookups go by it).
    provider_index: u32,
    /// The provider's id, if it sent one.
    id: Option<String>,
    name: Option<String>,
    started: bool,
    held_arguments: String,
}

#[derive(Debug, Default)]
pub(super) struct ToolCallAssembler {
    slots: Vec<ToolCallSlot>,
}

impl ToolCallAssembler {
    /// True once any tool call has been seen.
    pub(super) fn any(&self) -> bool {
        !self.slots.is_empty()
    }

    /// Applies the fragment found at `position` in a delta's `tool_calls` array.
    pub(super) fn apply(
        &mut self,
        position: usize,
        fragment: ToolCallFragment,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let id = fragment.id.filter(|id| !id.is_empty());
        let name = fragment.name.filter(|name| !name.is_empty());
        let arguments = fragment.arguments.filter(|text| !text.is_empty());
        if id.is_none() && name.is_none() && arguments.is_none() {
            return Ok(());
        }
        let slot_position = self.slot_for(position, fragment.index, id.as_deref())?;
        let slot = &mut self.slots[slot_position];
        if slot.id.is_none() && !slot.started {
            slot.id = id;
        }
        if slot.name.is_none() {
            slot.name = name;
        }
        if !slot.started && slot.name.is_some() {
            slot.start(out);
        }
        if let Some(arguments) = arguments {
            if slot.started {
                out.push(ModelEvent::ToolCallArgumentsDelta {
                    index: slot.index,
                    delta: arguments,
                });
            } else {
                slot.held_arguments.push_str(&arguments);
            }
        }
        Ok(())
    }

    /// Starts calls whose name never arrived (with an empty name), so that no
    /// call the model made is silently lost. Called before `Finished`.
    pub(super) fn start_nameless(&mut self, out: &mut Vec<ModelEvent>) {
        for slot in self.slots.iter_mut().filter(|slot| !slot.started) {
            slot.start(out);
        }
    }

    fn slot_for(
        &mut self,
        position: usize,
        provider_index: Option<u32>,
        id: Option<&str>,
    ) -> Result<usize, ModelError> {
        let provider_index = match (provider_index, id) {
            (Some(index), _) => index,
            (None, Some(id)) => {
                if let Some(found) = self.slots.iter().position(|slot| slot.has_id(id)) {
                    return Ok(found);
                }
                let index = self.unused_index(position)?;
                return self.push_slot(index, index);
            }
            (None, None) => u32::try_from(position)
                .map_err(|_| ModelError::Malformed("too many tool calls in one delta".into()))?,
        };
        let latest = self
            .slots
            .iter()
            .rposition(|slot| slot.provider_index == provider_index);
        match latest {
            Some(found) if !self.slots[found].conflicts_with(id) => Ok(found),
            _ => {
                let index = self.unused_index_preferring(provider_index)?;
                self.push_slot(index, provider_index)
            }
        }
    }

    fn push_slot(&mut self, index: u32, provider_index: u32) -> Result<usize, ModelError> {
        if self.slots.len() >= MAX_TOOL_CALLS {
            return Err(ModelError::Malformed(format!(
                "more than {MAX_TOOL_CALLS} tool calls in one reply"
            )));
        }
        self.slots.push(ToolCallSlot {
            index,
            provider_index,
            id: None,
            name: None,
            started: false,
            held_arguments: String::new(),
        });
        Ok(self.slots.len() - 1)
    }

    fn unused_index_preferring(&self, preferred: u32) -> Result<u32, ModelError> {
        if self.index_in_use(preferred) {
            self.fresh_index()
        } else {
            Ok(preferred)
        }
    }

    fn unused_index(&self, position: usize) -> Result<u32, ModelError> {
        match u32::try_from(position) {
            Ok(index) => self.unused_index_preferring(index),
            Err(_) => self.fresh_index(),
        }
    }

    fn index_in_use(&self, index: u32) -> bool {
        self.slots.iter().any(|slot| slot.index == index)
    }

    fn fresh_index(&self) -> Result<u32, ModelError> {
        match self.slots.iter().map(|slot| slot.index).max() {
            None => Ok(0),
            Some(highest) => highest
                .checked_add(1)
                .ok_or_else(|| ModelError::Malformed("tool call index overflow".into())),
        }
    }
}

impl ToolCallSlot {
    fn has_id(&self, id: &str) -> bool {
        self.id.as_deref() == Some(id)
    }

    /// A different real id at the same index means a different call.
    fn conflicts_with(&self, id: Option<&str>) -> bool {
        matches!((self.id.as_deref(), id), (Some(known), Some(new)) if known != new)
    }

    fn start(&mut self, out: &mut Vec<ModelEvent>) {
        self.started = true;
        let id = match &self.id {
            Some(id) => id.clone(),
            None => format!("call_{}", self.index),
        };
        out.push(ModelEvent::ToolCallStarted {
            index: self.index,
            id,
            name: self.name.clone().unwrap_or_default(),
        });
        if !self.held_arguments.is_empty() {
            out.push(ModelEvent::ToolCallArgumentsDelta {
                index: self.index,
                delta: std::mem::take(&mut self.held_arguments),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragment(
        index: Option<u32>,
        id: Option<&str>,
        name: Option<&str>,
        args: &str,
    ) -> ToolCallFragment {
        ToolCallFragment {
            index,
            id: id.map(str::to_string),
            name: name.map(str::to_string),
            arguments: Some(args.to_string()),
        }
    }

    fn started(index: u32, id: &str, name: &str) -> ModelEvent {
        ModelEvent::ToolCallStarted {
            index,
            id: id.into(),
            name: name.into(),
        }
    }

    fn args(index: u32, delta: &str) -> ModelEvent {
        ModelEvent::ToolCallArgumentsDelta {
            index,
            delta: delta.into(),
        }
    }

    fn run(fragments: Vec<(usize, ToolCallFragment)>) -> Vec<ModelEvent> {
        let mut assembler = ToolCallAssembler::default();
        let mut out = Vec::new();
        for (position, fragment) in fragments {
            assembler
                .apply(position, fragment, &mut out)
                .expect("fragment applies");
        }
        assembler.start_nameless(&mut out);
        out
    }

    #[test]
    fn first_fragment_may_already_carry_arguments() {
        let out = run(vec![(
            0,
            fragment(Some(0), Some("c1"), Some("f"), "{\"a\""),
        )]);
        assert_eq!(out, vec![started(0, "c1", "f"), args(0, "{\"a\"")]);
    }

    #[test]
    fn missing_id_is_minted_from_the_index() {
        let out = run(vec![(0, fragment(Some(3), None, Some("f"), ""))]);
        assert_eq!(out, vec![started(3, "call_3", "f")]);
    }

    #[test]
    fn missing_index_falls_back_to_position() {
        let out = run(vec![
            (0, fragment(None, None, Some("f"), "")),
            (1, fragment(None, None, Some("g"), "")),
            (1, fragment(None, None, None, "{}")),
        ]);
        assert_eq!(
            out,
            vec![
                started(0, "call_0", "f"),
                started(1, "call_1", "g"),
                args(1, "{}")
            ]
        );
    }

    #[test]
    fn index_less_calls_are_told_apart_by_id() {
        let out = run(vec![
            (0, fragment(None, Some("a"), Some("f"), "{}")),
            (0, fragment(None, Some("b"), Some("g"), "{}")),
        ]);
        assert_eq!(
            out,
            vec![
                started(0, "a", "f"),
                args(0, "{}"),
                started(1, "b", "g"),
                args(1, "{}")
            ]
        );
    }

    #[test]
    fn a_new_id_at_a_reused_index_becomes_a_new_call() {
        let out = run(vec![
            (0, fragment(Some(0), Some("a"), Some("f"), "{}")),
            (0, fragment(Some(0), Some("b"), Some("g"), "{\"x\"")),
            (0, fragment(Some(0), None, None, ":1}")),
        ]);
        assert_eq!(
            out,
            vec![
                started(0, "a", "f"),
                args(0, "{}"),
                started(1, "b", "g"),
                args(1, "{\"x\""),
                args(1, ":1}")
            ]
        );
    }

    #[test]
    fn repeated_id_and_name_do_not_restart_a_call() {
        let out = run(vec![
            (0, fragment(Some(0), Some("a"), Some("f"), "{")),
            (0, fragment(Some(0), Some("a"), Some("f"), "}")),
        ]);
        assert_eq!(out, vec![started(0, "a", "f"), args(0, "{"), args(0, "}")]);
    }

    #[test]
    fn arguments_before_the_name_are_held_until_it_arrives() {
        let out = run(vec![
            (0, fragment(Some(0), Some("a"), None, "{\"q\":")),
            (0, fragment(Some(0), None, Some("search"), "1}")),
        ]);
        assert_eq!(
            out,
            vec![started(0, "a", "search"), args(0, "{\"q\":"), args(0, "1}")]
        );
    }

    #[test]
    fn an_absurd_number_of_calls_is_rejected() {
        let mut assembler = ToolCallAssembler::default();
        let mut out = Vec::new();
        let mut result = Ok(());
        for index in 0..=MAX_TOOL_CALLS as u32 {
            result = assembler.apply(0, fragment(Some(index), None, Some("f"), ""), &mut out);
        }
        assert!(matches!(result, Err(ModelError::Malformed(_))));
    }

    #[test]
    fn empty_fragments_do_not_invent_calls() {
        let empty = ToolCallFragment {
            index: Some(0),
            ..ToolCallFragment::default()
        };
        assert_eq!(run(vec![(0, empty)]), vec![]);
    }

    #[test]
    fn a_call_whose_name_never_arrives_is_still_reported() {
        let out = run(vec![(0, fragment(Some(0), Some("a"), None, "{}"))]);
        assert_eq!(out, vec![started(0, "a", ""), args(0, "{}")]);
    }
}

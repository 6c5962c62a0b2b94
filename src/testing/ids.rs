//! Counting ids shared by every core a test builds on the same store, so a
//! core rebuilt after a simulated eviction never mints an id an earlier one
//! used (the real host mints random ones).

use std::cell::RefCell;
use std::rc::Rc;

use crate::core::{CountingIds, IdKind, IdSource};

/// `msg-1`, `req-2`…, counted across clones: give each rebuilt core a clone.
#[derive(Debug, Clone, Default)]
pub struct SharedIds(Rc<RefCell<CountingIds>>);

impl IdSource for SharedIds {
    fn new_id(&mut self, kind: IdKind) -> String {
        self.0.borrow_mut().new_id(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_counter() {
        let mut a = SharedIds::default();
        let mut b = a.clone();
        assert_eq!(a.new_id(IdKind::Message), "msg-1");
        assert_eq!(b.new_id(IdKind::Request), "req-2");
        assert_eq!(a.new_id(IdKind::Approval), "apr-3");
    }
}

pub mod persisted;
pub mod row_limits;
pub mod shape;

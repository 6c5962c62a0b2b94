pub mod persisted;
pub mod row_limits;
pub mod schedule_row;
pub mod shape;

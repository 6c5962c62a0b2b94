pub mod persisted;
pub mod request_rate_row;
pub mod row_limits;
pub mod schedule_row;
pub mod shape;

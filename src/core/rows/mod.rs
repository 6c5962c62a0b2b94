pub mod context_blocks_row;
pub mod persisted;
pub mod request_rate_row;
pub mod row_limits;
pub mod schedule_row;
pub mod shape;
pub mod submission_row;
pub mod token_ledger_row;

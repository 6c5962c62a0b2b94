pub mod state;
pub mod value;

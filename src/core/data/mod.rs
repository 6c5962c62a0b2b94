pub mod accumulator;
pub mod connections;
pub mod context;
pub mod context_window;
pub mod queue;
pub mod timers;
pub mod transcript;

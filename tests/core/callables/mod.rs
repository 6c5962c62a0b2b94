//! Callable methods over the socket, and frames left to the author.

mod calls;
mod streams;

//! OAuth for MCP servers that ask a person to sign in, sans-I/O: finding
//! the authorization server (`discovery`), PKCE (`pkce`), the requests and
//! answers of the authorization-code grant and refresh (`grant`), what is
//! kept of a sign-in (`credentials`), and what a sign-in takes from the
//! server being added (`trust`: https endpoints, its own resource), and a
//! sign-in bound to the browser that started it (`browser_binding`), and a
//! `state` the worker can check before reaching the agent (`signed_state`). The host (`agent::host::mcp_oauth`)
//! sends the requests, stores the credentials and serves the callback.

pub mod browser_binding;
pub mod credentials;
pub mod discovery;
pub mod grant;
pub mod pkce;
pub mod signed_state;
pub mod trust;

pub use credentials::{server_of_state, Credentials, OAuthClient, Pending, Tokens};
pub use discovery::{AuthServer, Challenge};

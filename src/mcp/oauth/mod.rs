//! OAuth for MCP servers that ask a person to sign in, sans-I/O: finding
//! the authorization server (`discovery`), PKCE (`pkce`), the requests and
//! answers of the authorization-code grant and refresh (`grant`), what is
//! kept of a sign-in (`credentials`), and what a sign-in takes from the
//! server being added (`trust`: https endpoints, its own resource). The host (`agent::host::mcp_oauth`)
//! sends the requests, stores the credentials and serves the callback.

pub mod credentials;
pub mod discovery;
pub mod grant;
pub mod pkce;
pub mod trust;

pub use credentials::{server_of_state, Credentials, OAuthClient, Pending, Tokens};
pub use discovery::{AuthServer, Challenge};

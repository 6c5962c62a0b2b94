//! The requests of the authorization-code grant with PKCE and their
//! answers: registering the agent as a client (RFC 7591), the URL a person
//! opens to sign in, trading the code for tokens and refreshing them
//! (RFC 6749 §4.1, §6), each asking for the MCP server as the `resource`.
//! Every answer is read through the gate (`gate::OAUTH_ANSWER`).

use serde_json::{json, Value};
use url::form_urlencoded::Serializer;
use url::Url;

use super::credentials::{OAuthClient, Tokens};
use super::discovery::AuthServer;
use crate::mcp::jsonrpc::{McpError, McpReply, McpRequest};
use crate::protocol::gate::{self, OAUTH_ANSWER};

/// The client name the agent registers under.
const CLIENT_NAME: &str = "durable-chat agent";

/// The registration of a public client redirecting to `redirect_uri`.
pub fn registration(endpoint: &str, redirect_uri: &str) -> McpRequest {
    let body = json!({
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    McpRequest {
        method: "POST",
        url: endpoint.to_string(),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json".into()),
        ],
        body: Some(body.to_string()),
        id: None,
    }
}

/// The registered client.
pub fn read_registration(reply: &McpReply) -> Result<OAuthClient, McpError> {
    let json = json_of(reply, "registration")?;
    let client_id = json
        .get("client_id")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::Malformed("the registration has no client_id".into()))?;
    Ok(OAuthClient {
        client_id: client_id.to_string(),
        client_secret: json
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// What the authorization URL carries.
pub struct Authorization<'a> {
    pub server: &'a AuthServer,
    pub client: &'a OAuthClient,
    pub redirect_uri: &'a str,
    pub challenge: &'a str,
    pub state: &'a str,
    pub resource: &'a str,
    pub scope: Option<&'a str>,
}

/// The URL a person opens to sign in and allow the agent.
pub fn authorization_url(a: &Authorization) -> Result<String, McpError> {
    let mut url = Url::parse(&a.server.authorization_endpoint)
        .map_err(|e| McpError::Malformed(format!("the authorization endpoint: {e}")))?;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &a.client.client_id)
            .append_pair("redirect_uri", a.redirect_uri)
            .append_pair("code_challenge", a.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", a.state)
            .append_pair("resource", a.resource);
        if let Some(scope) = a.scope {
            query.append_pair("scope", scope);
        }
    }
    Ok(url.into())
}

fn token_request(endpoint: &str, client: &OAuthClient, pairs: &[(&str, &str)]) -> McpRequest {
    let mut form = Serializer::new(String::new());
    for (k, v) in pairs {
        form.append_pair(k, v);
    }
    form.append_pair("client_id", &client.client_id);
    if let Some(secret) = &client.client_secret {
        form.append_pair("client_secret", secret);
    }
    McpRequest {
        method: "POST",
        url: endpoint.to_string(),
        headers: vec![
            (
                "content-type".into(),
                "application/x-www-form-urlencoded".into(),
            ),
            ("accept".into(), "application/json".into()),
        ],
        body: Some(form.finish()),
        id: None,
    }
}

/// Trades the code the callback brought for tokens.
pub fn code_exchange(
    server: &AuthServer,
    client: &OAuthClient,
    code: &str,
    verifier: &str,
    redirect_uri: &str,
    resource: &str,
) -> McpRequest {
    token_request(
        &server.token_endpoint,
        client,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", redirect_uri),
            ("resource", resource),
        ],
    )
}

/// Asks for a new access token with the refresh token.
pub fn refresh(
    server: &AuthServer,
    client: &OAuthClient,
    refresh_token: &str,
    resource: &str,
) -> McpRequest {
    token_request(
        &server.token_endpoint,
        client,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("resource", resource),
        ],
    )
}

/// The tokens a token endpoint answered, at `now_ms`. A refresh that
/// brings no new refresh token keeps `previous_refresh`.
pub fn read_tokens(
    reply: &McpReply,
    now_ms: u64,
    previous_refresh: Option<&str>,
) -> Result<Tokens, McpError> {
    let json = json_of(reply, "token endpoint")?;
    let access_token = json
        .get("access_token")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::Malformed("the token answer has no access_token".into()))?;
    let kind = json
        .get("token_type")
        .and_then(Value::as_str)
        .unwrap_or("bearer");
    if !kind.eq_ignore_ascii_case("bearer") {
        return Err(McpError::Malformed(format!(
            "token type '{kind}' is not bearer"
        )));
    }
    let lifetime_ms = json
        .get("expires_in")
        .and_then(Value::as_u64)
        .map(|s| s.saturating_mul(1000));
    Ok(Tokens {
        access_token: access_token.to_string(),
        refresh_token: json
            .get("refresh_token")
            .and_then(Value::as_str)
            .or(previous_refresh)
            .map(str::to_string),
        expires_at_ms: lifetime_ms.map(|l| now_ms.saturating_add(l)),
        lifetime_ms,
    })
}

/// A 2xx JSON answer, or the OAuth error it carries.
fn json_of(reply: &McpReply, what: &str) -> Result<Value, McpError> {
    let json: Option<Value> = gate::read_value(&reply.body, &OAUTH_ANSWER).ok();
    if !(200..300).contains(&reply.status) {
        let error = json.as_ref().and_then(|j| {
            let code = j.get("error")?.as_str()?;
            let text = j.get("error_description").and_then(Value::as_str);
            Some(match text {
                Some(text) => format!("{code}: {text}"),
                None => code.to_string(),
            })
        });
        return Err(McpError::Http {
            status: reply.status,
            body: format!(
                "{what}: {}",
                error.unwrap_or_else(|| reply.body.trim().chars().take(200).collect())
            ),
        });
    }
    json.ok_or_else(|| McpError::Malformed(format!("the {what} answer is not JSON")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> AuthServer {
        AuthServer {
            authorization_endpoint: "http://as/authorize?tenant=1".into(),
            token_endpoint: "http://as/token".into(),
            registration_endpoint: Some("http://as/register".into()),
        }
    }

    fn reply(status: u16, body: &str) -> McpReply {
        McpReply {
            status,
            content_type: Some("application/json".into()),
            body: body.into(),
            ..McpReply::default()
        }
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_and_resource() {
        let client = OAuthClient {
            client_id: "c 1".into(),
            client_secret: None,
        };
        let url = authorization_url(&Authorization {
            server: &server(),
            client: &client,
            redirect_uri: "http://agent/agents/chat-agent/r/callback",
            challenge: "CH",
            state: "n.demo",
            resource: "http://h/mcp",
            scope: Some("mcp:tools"),
        })
        .unwrap();
        let parsed = Url::parse(&url).unwrap();
        let q: std::collections::HashMap<_, _> = parsed.query_pairs().into_owned().collect();
        assert_eq!(q["tenant"], "1");
        assert_eq!(q["client_id"], "c 1");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["state"], "n.demo");
        assert_eq!(
            q["redirect_uri"],
            "http://agent/agents/chat-agent/r/callback"
        );
        assert_eq!(q["resource"], "http://h/mcp");
        assert_eq!(q["scope"], "mcp:tools");
    }

    #[test]
    fn token_requests_are_forms_and_answers_become_tokens() {
        let client = OAuthClient {
            client_id: "c".into(),
            client_secret: Some("s&t".into()),
        };
        let request = code_exchange(
            &server(),
            &client,
            "co de",
            "ver",
            "http://r/cb",
            "http://h/mcp",
        );
        let body = request.body.unwrap();
        assert!(body.contains("grant_type=authorization_code"));
        assert!(body.contains("code=co+de"));
        assert!(body.contains("code_verifier=ver"));
        assert!(body.contains("client_secret=s%26t"));
        let tokens = read_tokens(
            &reply(
                200,
                r#"{"access_token":"a","token_type":"Bearer","expires_in":60,"refresh_token":"r"}"#,
            ),
            1_000,
            None,
        )
        .unwrap();
        assert_eq!(tokens.expires_at_ms, Some(61_000));
        let refreshed = read_tokens(
            &reply(200, r#"{"access_token":"b","token_type":"bearer"}"#),
            0,
            Some("r"),
        )
        .unwrap();
        assert_eq!(refreshed.refresh_token.as_deref(), Some("r"));
        let refused = read_tokens(
            &reply(
                400,
                r#"{"error":"invalid_grant","error_description":"expired"}"#,
            ),
            0,
            None,
        );
        assert_eq!(
            refused.unwrap_err().to_string(),
            "HTTP 400: token endpoint: invalid_grant: expired"
        );
    }

    #[test]
    fn a_registration_answer_gives_the_client() {
        let request = registration("http://as/register", "http://r/cb");
        assert!(request
            .body
            .unwrap()
            .contains("\"redirect_uris\":[\"http://r/cb\"]"));
        let client =
            read_registration(&reply(201, r#"{"client_id":"abc","client_secret":"x"}"#)).unwrap();
        assert_eq!(client.client_id, "abc");
        assert!(read_registration(&reply(200, "{}")).is_err());
    }
}

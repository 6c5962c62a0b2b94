//! Tests of `servers.rs`.

use super::*;

fn connected(tools: &[&str]) -> Connected {
    Connected {
        capabilities: json!({"tools": {}}),
        instructions: Some("hi".into()),
        tools: tools
            .iter()
            .map(|n| json!({"name": n, "description": format!("does {n}"), "inputSchema": {"type":"object","properties":{"a":{"type":"number"}}}}))
            .collect(),
        left_out: Vec::new(),
    }
}

#[test]
fn the_tools_of_all_servers_share_one_cap_and_the_status_says_what_was_left_out() {
    let mut servers = Servers::default();
    let big = |name: &str| json!({"name": name, "description": "d".repeat(30_000)});
    let first = servers
        .add(McpServer::new("A", "http://a/"), false)
        .unwrap();
    let tools: Vec<_> = (0..6).map(|i| big(&format!("a{i}"))).collect();
    assert_eq!(
        servers.set_ready(
            &first,
            Connected {
                tools,
                ..connected(&[])
            }
        ),
        None
    );
    let second = servers
        .add(McpServer::new("B", "http://b/"), false)
        .unwrap();
    let tools: Vec<_> = (0..6).map(|i| big(&format!("b{i}"))).collect();
    let status = servers
        .set_ready(
            &second,
            Connected {
                tools,
                ..connected(&[])
            },
        )
        .unwrap();
    assert!(status.starts_with("4 tools left out: 'b2'"), "{status}");
    let offered = servers.tool_specs();
    assert_eq!(offered.len(), 8, "six of A, two of B");
    let bytes: usize = servers.entries.values().map(|e| e.tool_bytes).sum();
    assert!(bytes <= MAX_TOOL_SPECS_BYTES);
    let b = servers.list().into_iter().find(|s| s.id == "b").unwrap();
    assert_eq!(b.state, ServerState::Ready);
    assert_eq!(b.error.as_deref(), Some(status.as_str()));
    assert_eq!(b.tools, ["mcp_b_b0", "mcp_b_b1"]);
}

#[test]
fn only_ready_servers_offer_tools_under_their_prefix() {
    let mut servers = Servers::new(["get_weather".to_string()], OutboundHosts::default());
    let id = servers
        .add(McpServer::new("Demo", "http://m/mcp"), false)
        .unwrap();
    assert!(
        servers.tool_specs().is_empty(),
        "connecting servers offer nothing"
    );
    servers.set_ready(&id, connected(&["add", "echo"]));
    let specs = servers.tool_specs();
    let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["mcp_demo_add", "mcp_demo_echo"]);
    assert!(
        !specs[0].is_overridable(),
        "a client tool never replaces an MCP tool"
    );
    assert_eq!(specs[0].description, "does add");
    assert_eq!(
        servers.resolve("mcp_demo_echo"),
        Some(("demo".into(), "echo".into()))
    );
    servers.set_failed(&id, "gone");
    assert!(servers.tool_specs().is_empty());
    assert_eq!(servers.resolve("get_weather"), None);
}

#[test]
fn a_server_needing_approval_offers_tools_that_need_it() {
    let mut servers = Servers::default();
    let id = servers
        .add(
            McpServer::new("ops", "http://m/")
                .needs_approval()
                .timeout_ms(900),
            false,
        )
        .unwrap();
    servers.set_ready(&id, connected(&["restart"]));
    let spec = &servers.tool_specs()[0];
    assert!(spec.approval.required_for(&json!({})));
    assert_eq!(spec.timeout_ms, Some(900));
}

#[test]
fn the_same_name_with_another_url_is_refused_and_declared_servers_stay() {
    let mut servers = Servers::default();
    servers
        .add(McpServer::new("Demo", "http://a/"), true)
        .unwrap();
    assert!(servers
        .add(McpServer::new("demo", "http://b/"), false)
        .is_err());
    assert!(servers
        .add(McpServer::new("demo", "http://a/"), false)
        .is_err());
    assert!(servers.remove("Demo").is_err());
    assert_eq!(servers.remove("other").unwrap(), None);
}

#[test]
fn tabs_are_shown_a_server_url_without_its_credentials() {
    assert_eq!(
        shown_url("https://user:secret@mcp.example/mcp?api_key=k#t"),
        "https://mcp.example/mcp"
    );
    assert_eq!(
        shown_url("http://127.0.0.1:8790/mcp"),
        "http://127.0.0.1:8790/mcp"
    );
}

#[test]
fn the_frame_carries_each_server_and_the_ready_tools() {
    let mut servers = Servers::default();
    let ready = servers
        .add(McpServer::new("Demo", "http://a/mcp"), false)
        .unwrap();
    servers.set_ready(&ready, connected(&["add"]));
    let failed = servers
        .add(McpServer::new("Down", "http://b/mcp"), false)
        .unwrap();
    servers.set_failed(&failed, "could not reach the server: refused");
    let frame: Value = serde_json::from_str(&servers.frame()).unwrap();
    assert_eq!(frame["type"], "cf_agent_mcp_servers");
    let demo = &frame["mcp"]["servers"]["demo"];
    assert_eq!(demo["state"], "ready");
    assert_eq!(demo["server_url"], "http://a/mcp");
    assert_eq!(demo["instructions"], "hi");
    assert_eq!(demo["auth_url"], Value::Null);
    assert_eq!(frame["mcp"]["servers"]["down"]["state"], "failed");
    assert_eq!(
        frame["mcp"]["servers"]["down"]["error"],
        "could not reach the server: refused"
    );
    assert_eq!(
        frame["mcp"]["tools"],
        json!([{"name":"add","description":"does add","inputSchema":{"type":"object","properties":{"a":{"type":"number"}}},"serverId":"demo"}])
    );
    assert_eq!(frame["mcp"]["prompts"], json!([]));
}

#[test]
fn a_server_waiting_for_a_sign_in_shows_where_and_offers_nothing() {
    let mut servers = Servers::default();
    let id = servers
        .add(McpServer::new("Locked", "http://a/mcp"), false)
        .unwrap();
    servers.set_authenticating(&id, "http://as/authorize?state=n.locked", "as");
    let frame: Value = serde_json::from_str(&servers.frame()).unwrap();
    let locked = &frame["mcp"]["servers"]["locked"];
    assert_eq!(locked["state"], "authenticating");
    assert_eq!(locked["auth_url"], "http://as/authorize?state=n.locked");
    assert_eq!(locked["auth_issuer"], "as");
    assert!(servers.tool_specs().is_empty());
    servers.set_ready(&id, connected(&["add"]));
    assert_eq!(servers.list()[0].auth_url, None);
    assert_eq!(servers.list()[0].auth_issuer, None);
    assert_eq!(servers.tool_specs().len(), 1);
}

#[test]
fn a_server_on_a_refused_host_or_past_the_cap_is_refused_and_not_listed() {
    let mut servers = Servers::default();
    for url in [
        "http://127.0.0.1:8790/mcp",
        "http://169.254.169.254/latest",
        "http://localhost/mcp",
    ] {
        let err = servers
            .add(McpServer::new("local", url), false)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("the MCP server URL is refused: "), "{err}");
    }
    assert!(servers.list().is_empty());
    let mut allowed = Servers::new([], OutboundHosts::from_list("127.0.0.1"));
    assert!(allowed
        .add(McpServer::new("local", "http://127.0.0.1:8790/mcp"), false)
        .is_ok());
    for i in 1..MAX_SERVERS {
        allowed
            .add(
                McpServer::new(&format!("s{i}"), "https://m.example/"),
                false,
            )
            .unwrap();
    }
    let err = allowed
        .add(McpServer::new("one-more", "https://m.example/"), false)
        .unwrap_err();
    assert!(err.to_string().contains("at most 16 MCP servers"), "{err}");
    assert!(allowed
        .add(McpServer::new("s1", "https://m.example/"), false)
        .is_ok());
}

#[test]
fn a_servers_error_is_cut_for_the_tabs() {
    let mut servers = Servers::default();
    let id = servers
        .add(McpServer::new("Loud", "https://m.example/"), false)
        .unwrap();
    servers.set_failed(&id, &"e".repeat(50_000));
    let frame: Value = serde_json::from_str(&servers.frame()).unwrap();
    let error = frame["mcp"]["servers"]["loud"]["error"].as_str().unwrap();
    assert_eq!(error.chars().count(), MAX_ERROR_CHARS + 1);
    assert!(error.ends_with('…'));
}

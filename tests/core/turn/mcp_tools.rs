//! Tools of MCP servers as the core offers them (`Core::set_mcp`, with the
//! names and specs `mcp::Servers` gives): the state frame on connect and to
//! every tab when it changes, the tools offered after the agent's own,
//! filtered by `before_turn`, a call routed to the host as a server tool's
//! run with `before_tool_call` and approvals applying, and a server's tools
//! withdrawn when it fails.

use std::rc::Rc;

use durable_chat::core::{ToolCallDecision, TurnConfig};
use durable_chat::mcp::{Connected, McpServer, Servers};
use serde_json::json;

use crate::sim::*;

fn demo_servers(server: McpServer) -> (Servers, String) {
    let mut servers = Servers::new(
        ["get_weather".to_string(), "delete_file".to_string()],
        durable_chat::outbound::OutboundHosts::from_list("127.0.0.1"),
    );
    let id = servers.add(server, false).expect("a valid server");
    servers.set_ready(
        &id,
        Connected {
            capabilities: json!({"tools": {}}),
            instructions: None,
            tools: vec![
                json!({"name": "add", "description": "Adds", "inputSchema": {"type": "object"}}),
                json!({"name": "echo.text", "inputSchema": {"type": "object"}}),
            ],
            left_out: Vec::new(),
        },
    );
    (servers, id)
}

fn set(sim: &mut Sim, servers: &Servers) {
    let (frame, tools) = (servers.frame(), servers.tool_specs());
    sim.call(|core, _| core.set_mcp(frame, tools));
}

#[test]
fn the_servers_changing_is_an_event_every_open_tab_hears_of() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.clear_frames();
    let (servers, _) = demo_servers(McpServer::new("Demo", "http://127.0.0.1:1/mcp"));
    sim.handle(durable_chat::core::Event::McpServersChanged {
        frame: servers.frame(),
        tools: servers.tool_specs(),
    });
    let sent = of_type(sim.frames("a"), MCP);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["mcp"]["servers"]["demo"]["state"], "ready");
    let names: Vec<String> = servers.tool_specs().into_iter().map(|t| t.name).collect();
    assert_eq!(names.len(), 2, "both of the server's tools");
    for name in &names {
        assert!(
            sim.core().config().tool(name).is_some(),
            "{name} is offered"
        );
    }
}

#[test]
fn a_tab_gets_the_servers_frame_on_connect_and_every_tab_when_it_changes() {
    let mut sim = Sim::new();
    let (servers, _) = demo_servers(McpServer::new("Demo", "http://127.0.0.1:1/mcp"));
    set(&mut sim, &servers);
    sim.connect("a");
    let connect = of_type(sim.frames("a"), MCP);
    assert_eq!(connect.len(), 1);
    assert_eq!(connect[0]["mcp"]["servers"]["demo"]["state"], "ready");
    assert_eq!(connect[0]["mcp"]["tools"][0]["serverId"], "demo");
    sim.connect("b");
    sim.clear_frames();

    set(&mut sim, &servers);
    assert!(
        of_type(sim.frames("a"), MCP).is_empty(),
        "an unchanged frame is not sent again"
    );
    let (mut changed, id) = demo_servers(McpServer::new("Demo", "http://127.0.0.1:1/mcp"));
    changed.set_failed(&id, "could not reach the server");
    set(&mut sim, &changed);
    for tab in ["a", "b"] {
        let frames = of_type(sim.frames(tab), MCP);
        assert_eq!(frames.len(), 1, "{tab}");
        assert_eq!(
            frames[0]["mcp"]["servers"]["demo"]["error"],
            "could not reach the server"
        );
        assert_eq!(frames[0]["mcp"]["tools"], json!([]));
    }
}

#[test]
fn mcp_tools_are_offered_after_the_agents_own_and_replaced_not_piled_up() {
    let mut sim = two_tabs();
    let (servers, id) = demo_servers(McpServer::new("Demo", "http://127.0.0.1:1/mcp"));
    set(&mut sim, &servers);
    set(&mut sim, &servers);
    sim.script(Reply::text("hi"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    assert_eq!(
        sim.last_request().tool_names(),
        [
            "get_weather",
            "delete_file",
            "mcp_demo_add",
            "mcp_demo_echo_text"
        ]
    );

    let mut failed = servers;
    failed.set_failed(&id, "gone");
    set(&mut sim, &failed);
    sim.script(Reply::text("again"));
    sim.send("a", chat_request("r2", &[user("u2", "and now")]));
    sim.run_until_idle();
    assert_eq!(
        sim.last_request().tool_names(),
        ["get_weather", "delete_file"]
    );
}

#[test]
fn before_turn_filters_mcp_tools_like_any_tool() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.preparer.hook = Rc::new(|_| TurnConfig {
        remove_tools: vec!["mcp_demo_add".into()],
        ..TurnConfig::default()
    });
    let (servers, _) = demo_servers(McpServer::new("Demo", "http://127.0.0.1:1/mcp"));
    set(&mut sim, &servers);
    sim.script(Reply::tool_call("call_1", "mcp_demo_add", json!({"a": 1})))
        .script(Reply::text("ok"));
    sim.send("a", chat_request("r1", &[user("u1", "add")]));
    sim.run_until_idle();
    assert_eq!(
        sim.requests()[0].tool_names(),
        ["get_weather", "delete_file", "mcp_demo_echo_text"]
    );
    assert!(
        sim.tools.runs.is_empty(),
        "a tool the turn does not offer is not run"
    );
    let answer = &sim.store.transcript()[1];
    assert_eq!(
        tool_part(answer, "call_1").unwrap()["state"],
        "output-error"
    );
}

#[test]
fn a_call_runs_on_the_host_under_its_offered_name_after_before_tool_call() {
    let mut sim = Sim::new();
    sim.decider.hook = Rc::new(|call| match call.input["a"].as_i64() {
        Some(13) => ToolCallDecision::Block("not 13".into()),
        _ => ToolCallDecision::Allow,
    });
    sim.connect("a");
    let (servers, _) = demo_servers(McpServer::new("Demo", "http://127.0.0.1:1/mcp"));
    set(&mut sim, &servers);
    sim.script(Reply::tool_calls(&[
        ("call_1", "mcp_demo_add", json!({"a": 1, "b": 2})),
        ("call_2", "mcp_demo_add", json!({"a": 13, "b": 2})),
    ]))
    .script(Reply::text("3"))
    .script_tool("mcp_demo_add", ToolReply::ok(json!("3")));
    sim.send("a", chat_request("r1", &[user("u1", "add")]));
    sim.run_until_idle();
    let runs = &sim.tools.runs;
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].tool_name.as_str(), &runs[0].input),
        ("mcp_demo_add", &json!({"a": 1, "b": 2}))
    );
    let answer = &sim.store.transcript()[1];
    assert_eq!(tool_part(answer, "call_1").unwrap()["output"], "3");
    assert_eq!(tool_part(answer, "call_2").unwrap()["errorText"], "not 13");
}

#[test]
fn a_server_that_needs_approval_makes_its_calls_wait_for_a_person() {
    let mut sim = two_tabs();
    let (servers, _) =
        demo_servers(McpServer::new("Demo", "http://127.0.0.1:1/mcp").needs_approval());
    set(&mut sim, &servers);
    sim.script(Reply::tool_call("call_1", "mcp_demo_add", json!({"a": 1})));
    sim.send("a", chat_request("r1", &[user("u1", "add")]));
    sim.run_until_idle();
    assert!(sim.tools.runs.is_empty());
    let types = chunk_types(sim.frames("a"), "r1");
    assert!(
        types.iter().any(|t| t == "tool-approval-request"),
        "{types:?}"
    );
}

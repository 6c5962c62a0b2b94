//! How many chat requests a connection, and an agent, may make in a minute:
//! a request past a limit is refused on its own id with the wait, nothing
//! of it is stored, the socket goes on, and the count frees up as the
//! minute moves on.

use crate::sim::*;

fn limited(per_conn: usize, per_agent: usize) -> Sim {
    Sim::with(|config| {
        config.settings.limits.max_requests_per_minute = per_conn;
        config.settings.limits.max_agent_requests_per_minute = per_agent;
    })
}

fn ask(sim: &mut Sim, tab: &str, id: &str) {
    sim.script(Reply::text("ok"));
    sim.send(tab, chat_request(id, &[user(&format!("u-{id}"), "hi")]));
    sim.run_until_idle();
}

fn refusal(sim: &Sim, tab: &str, id: &str) -> Option<String> {
    let end = terminal(sim.frames(tab), id)?;
    (end["error"] == true).then(|| end["body"].as_str().unwrap_or_default().to_string())
}

#[test]
fn a_connection_past_its_rate_is_refused_on_the_request_id_until_the_minute_moves_on() {
    let mut sim = limited(3, 0);
    sim.connect("a");
    sim.connect("b");
    for n in 0..3 {
        ask(&mut sim, "a", &format!("r{n}"));
        assert_eq!(refusal(&sim, "a", &format!("r{n}")), None);
    }
    ask(&mut sim, "a", "over");
    let error = refusal(&sim, "a", "over").expect("refused");
    assert!(
        error
            .starts_with("too many requests from this connection (limit 3 a minute); try again in"),
        "{error}"
    );
    assert!(
        !sim.store.messages().iter().any(|m| m.id == "u-over"),
        "nothing of a refused request is stored"
    );
    ask(&mut sim, "b", "other-tab");
    assert_eq!(
        refusal(&sim, "b", "other-tab"),
        None,
        "the limit is per connection"
    );
    sim.advance(60_000);
    ask(&mut sim, "a", "later");
    assert_eq!(refusal(&sim, "a", "later"), None);
}

#[test]
fn an_agent_past_its_rate_refuses_every_connection() {
    let mut sim = limited(0, 2);
    sim.connect("a");
    sim.connect("b");
    ask(&mut sim, "a", "r1");
    ask(&mut sim, "b", "r2");
    ask(&mut sim, "b", "r3");
    let error = refusal(&sim, "b", "r3").expect("refused");
    assert!(
        error.starts_with("too many requests to this agent (limit 2 a minute)"),
        "{error}"
    );
    sim.advance(60_000);
    ask(&mut sim, "b", "r4");
    assert_eq!(refusal(&sim, "b", "r4"), None);
}

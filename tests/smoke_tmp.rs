mod sim;
use sim::*;
#[test]
fn smoke() {
    let mut s = Sim::new();
    s.connect("a");
    s.script(Reply::text("Hello there"));
    s.send("a", chat_request("r1", &[user("u1", "hi")]));
    s.run_until_idle();
    for f in s.frames("a") {
        println!("{f}");
    }
    println!("{:?}", s.store.ops.len());
}

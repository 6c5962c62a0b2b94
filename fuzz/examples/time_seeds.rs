//! Times each core_events input in a directory (diagnostics for slow inputs).
fn main() {
    let dir = std::env::args().nth(1).expect("a directory");
    let mut rows = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let data = std::fs::read(entry.path()).unwrap();
        let t = std::time::Instant::now();
        durable_chat_fuzz::core_events(&data);
        rows.push((t.elapsed(), entry.path(), data.len()));
    }
    rows.sort();
    for (t, p, n) in rows.iter().rev().take(8) {
        println!("{t:?} {n} {}", p.display());
    }
}

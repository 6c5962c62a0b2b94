//! Unit tests of the in-memory store: row order, replacement and moves,
//! deletes, chunk rows and the checked store's refusals.

use super::*;

fn put(store: &mut MemStore, seq: u64, id: &str, text: &str) {
    store.apply(&StoreOp::PutMessage {
        seq,
        message: UIMessage::user_text(id, text),
    });
}

fn record(request_id: &str) -> StreamRecord {
    StreamRecord {
        request_id: request_id.into(),
        message_id: format!("answer-{request_id}"),
        continuation: false,
        origin_message_ids: vec!["u1".into()],
        started_at: 0,
        recovery_root: None,
    }
}

fn append(store: &mut MemStore, request_id: &str, first_seq: u64, bodies: &[&str]) {
    store.apply(&StoreOp::AppendChunks {
        request_id: request_id.into(),
        first_seq,
        bodies: bodies.iter().map(|b| Rc::from(*b)).collect(),
    });
}

fn loaded(store: &MemStore) -> Vec<(u64, String, String)> {
    // As the core reads them: newest first through `History`, reversed.
    let shared = std::cell::RefCell::new(MemStore::unchecked());
    shared.borrow_mut().messages = store.messages.clone();
    shared.borrow_mut().by_seq = store.by_seq.clone();
    let mut entries = crate::core::History::page_before(&shared, u64::MAX, usize::MAX);
    entries.reverse();
    entries
        .into_iter()
        .map(|e| (e.seq, e.message.id.clone(), e.message.text()))
        .collect()
}

fn row(seq: u64, id: &str, text: &str) -> (u64, String, String) {
    (seq, id.into(), text.into())
}

#[test]
fn messages_load_in_seq_order_not_write_order() {
    let mut store = MemStore::new();
    put(&mut store, 5, "c", "third");
    put(&mut store, 0, "a", "first");
    put(&mut store, 2, "b", "second");
    assert_eq!(
        loaded(&store),
        [
            row(0, "a", "first"),
            row(2, "b", "second"),
            row(5, "c", "third")
        ]
    );
    assert_eq!(store.message_ids(), ["a", "b", "c"]);
}

#[test]
fn a_known_id_written_at_its_seq_is_replaced_in_place() {
    let mut store = MemStore::new();
    put(&mut store, 0, "a", "v1");
    put(&mut store, 1, "b", "x");
    put(&mut store, 0, "a", "v2");
    assert_eq!(loaded(&store), [row(0, "a", "v2"), row(1, "b", "x")]);
}

#[test]
fn a_known_id_written_at_another_seq_moves_there() {
    let mut store = MemStore::new();
    put(&mut store, 0, "a", "v1");
    put(&mut store, 1, "b", "x");
    put(&mut store, 2, "a", "v2");
    assert_eq!(loaded(&store), [row(1, "b", "x"), row(2, "a", "v2")]);
    assert_eq!(store.seq_of("a"), Some(2));
    assert_eq!(store.message_bodies().len(), 2, "still one row per id");
}

#[test]
fn messages_sharing_a_seq_load_in_insertion_order() {
    // SQLite does not forbid it; the checked store does (below).
    let mut store = MemStore::unchecked();
    put(&mut store, 3, "late", "1");
    put(&mut store, 3, "later", "2");
    put(&mut store, 3, "late", "1 again");
    assert_eq!(
        loaded(&store),
        [row(3, "late", "1 again"), row(3, "later", "2")],
        "an update keeps the row's place among equal seqs"
    );
}

#[test]
#[should_panic(expected = "seq 3 already holds message a")]
fn the_checked_store_refuses_two_messages_at_one_seq() {
    let mut store = MemStore::new();
    put(&mut store, 3, "a", "1");
    put(&mut store, 3, "b", "2");
}

#[test]
fn a_deleted_message_is_gone() {
    let mut store = MemStore::new();
    put(&mut store, 0, "a", "1");
    put(&mut store, 1, "b", "2");
    store.apply(&StoreOp::DeleteMessage { id: "a".into() });
    store.apply(&StoreOp::DeleteMessage { id: "nope".into() });
    assert_eq!(loaded(&store), [row(1, "b", "2")]);
    put(&mut store, 0, "a", "back");
    assert_eq!(loaded(&store), [row(0, "a", "back"), row(1, "b", "2")]);
}

#[test]
fn a_chunk_row_written_again_at_its_first_seq_is_replaced() {
    let mut store = MemStore::unchecked();
    store.apply(&StoreOp::OpenStream(record("r1")));
    append(&mut store, "r1", 0, &["a", "b"]);
    append(&mut store, "r1", 2, &["c"]);
    append(&mut store, "r1", 0, &["x"]);
    assert_eq!(store.chunks("r1").unwrap(), ["x", "c"]);
    let state = store.stored_state();
    assert_eq!(state.open_streams[0].chunks, ["x", "c"]);
}

#[test]
fn chunk_rows_load_by_first_seq_as_a_number() {
    let mut store = MemStore::new();
    store.apply(&StoreOp::OpenStream(record("r1")));
    let bodies: Vec<String> = (0..12).map(|n| format!("{{\"n\":{n}}}")).collect();
    let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
    append(&mut store, "r1", 0, &refs[..2]);
    append(&mut store, "r1", 2, &refs[2..10]);
    append(&mut store, "r1", 10, &refs[10..]);
    assert_eq!(store.stored_state().open_streams[0].chunks, bodies);
    assert_eq!(store.chunk_count("r1"), Some(12));
}

#[test]
#[should_panic(expected = "would get a gap or an overlap")]
fn the_checked_store_refuses_a_gap_in_the_chunk_log() {
    let mut store = MemStore::new();
    store.apply(&StoreOp::OpenStream(record("r1")));
    append(&mut store, "r1", 0, &["a"]);
    append(&mut store, "r1", 2, &["c"]);
}

#[test]
#[should_panic(expected = "would get a gap or an overlap")]
fn the_checked_store_refuses_an_overlap_in_the_chunk_log() {
    let mut store = MemStore::new();
    store.apply(&StoreOp::OpenStream(record("r1")));
    append(&mut store, "r1", 0, &["a", "b"]);
    append(&mut store, "r1", 1, &["c"]);
}

#[test]
#[should_panic(expected = "which is not open")]
fn the_checked_store_refuses_chunks_of_a_stream_not_open() {
    let mut store = MemStore::new();
    append(&mut store, "r1", 0, &["a"]);
}

#[test]
fn closing_a_stream_drops_its_record_and_chunks_only() {
    let mut store = MemStore::new();
    store.apply(&StoreOp::OpenStream(record("r1")));
    store.apply(&StoreOp::OpenStream(record("r2")));
    append(&mut store, "r1", 0, &["a"]);
    append(&mut store, "r2", 0, &["b"]);
    store.apply(&StoreOp::CloseStream {
        request_id: "r1".into(),
    });
    assert_eq!(store.open_stream_ids(), ["r2"]);
    assert_eq!(store.chunks("r1"), None);
    assert_eq!(store.chunk_count("r1"), None);
    assert_eq!(store.chunks("r2").unwrap(), ["b"]);
    let state = store.stored_state();
    assert_eq!(state.open_streams.len(), 1);
    assert_eq!(state.open_streams[0].record, record("r2"));
}

#[test]
fn open_streams_load_in_write_order_and_a_rewrite_moves_last() {
    let mut store = MemStore::new();
    store.apply(&StoreOp::OpenStream(record("r2")));
    store.apply(&StoreOp::OpenStream(record("r1")));
    assert_eq!(store.open_stream_ids(), ["r2", "r1"]);
    store.apply(&StoreOp::OpenStream(record("r2")));
    let ids: Vec<String> = store
        .stored_state()
        .open_streams
        .into_iter()
        .map(|o| o.record.request_id)
        .collect();
    assert_eq!(ids, ["r1", "r2"]);
}

#[test]
fn config_rows_are_read_back_through_read_config() {
    let mut store = MemStore::new();
    store.apply(&StoreOp::PutConfig {
        key: ConfigKey::ClientTools,
        value: r#"[{"name":"getLocation"}]"#.into(),
    });
    store.apply(&StoreOp::PutConfig {
        key: ConfigKey::Queue,
        value: "[]".into(),
    });
    let queued = r#"[{"requestId":"r2","trigger":"submit","messageIds":["u2"],"submittedAt":2}]"#;
    store.apply(&StoreOp::PutConfig {
        key: ConfigKey::Queue,
        value: queued.into(),
    });
    store.apply(&StoreOp::PutConfig {
        key: ConfigKey::CustomBody,
        value: "not json".into(),
    });
    let state = store.stored_state();
    assert_eq!(state.client_tools.len(), 1);
    assert_eq!(state.client_tools[0].name, "getLocation");
    assert_eq!(state.queue.len(), 1, "the last write of a row wins");
    assert_eq!(state.queue[0].request_id, "r2");
    assert!(state.body.is_empty(), "an unreadable body is dropped");
    store.apply(&StoreOp::DeleteConfig {
        key: ConfigKey::Queue,
    });
    assert_eq!(store.config(ConfigKey::Queue), None);
    assert_eq!(store.config_keys(), ["last_body", "last_client_tools"]);
}

#[test]
fn clear_all_empties_every_table() {
    let mut store = MemStore::new();
    put(&mut store, 0, "a", "1");
    store.apply(&StoreOp::OpenStream(record("r1")));
    append(&mut store, "r1", 0, &["a"]);
    store.apply(&StoreOp::PutConfig {
        key: ConfigKey::Queue,
        value: "[]".into(),
    });
    store.apply(&StoreOp::ClearAll);
    assert!(store.message_ids().is_empty());
    assert!(store.open_stream_ids().is_empty());
    assert!(!store.has_chunk_rows());
    assert!(store.config_keys().is_empty());
    let state = store.stored_state();
    assert!(loaded(&store).is_empty() && state.open_streams.is_empty());
    assert!(state.queue.is_empty());
    // Writes after a clear start from nothing.
    put(&mut store, 0, "b", "2");
    assert_eq!(loaded(&store), [row(0, "b", "2")]);
}

#[test]
fn unreadable_rows_are_skipped_as_a_load_skips_them() {
    let mut store = MemStore::new();
    put(&mut store, 0, "a", "1");
    put(&mut store, 1, "b", "2");
    store.apply(&StoreOp::OpenStream(record("r1")));
    store.apply(&StoreOp::OpenStream(record("r2")));
    append(&mut store, "r2", 0, &["x"]);
    append(&mut store, "r2", 1, &["y"]);
    store.messages.get_mut("a").unwrap().body = "{oops".into();
    store.streams.get_mut("r1").unwrap().record = "{oops".into();
    store.chunks.get_mut(&("r2".to_string(), 0)).unwrap().bodies = "{oops".into();
    assert_eq!(loaded(&store), [row(1, "b", "2")]);
    assert_eq!(
        store.message_bodies()[0],
        "{oops",
        "the row is still stored"
    );
    let state = store.stored_state();
    assert_eq!(state.open_streams.len(), 1);
    assert_eq!(state.open_streams[0].record.request_id, "r2");
    assert_eq!(state.open_streams[0].chunks, ["y"]);
}

//! Incremental parser for `text/event-stream` (Server-Sent Events) bodies.
//!
//! A small hand parser is used because it is sans-I/O: the HTTP adapter pushes
//! whatever byte chunks the network hands it into [`SseParser::feed`] and gets
//! complete events back, with no reader, runtime or clock involved. It follows
//! the WHATWG event-stream rules that matter for model providers:
//!
//! * lines end in `\n`, `\r\n` or `\r`, and a chunk may end anywhere — inside a
//!   line, between `\r` and `\n`, or inside a multi-byte UTF-8 character;
//! * bytes are buffered until a line is complete and only complete lines are
//!   decoded (lossily, so invalid UTF-8 becomes U+FFFD instead of an error);
//! * `data:` lines of one event are joined with `\n`; `event:` sets the type;
//!   lines starting with `:` are comments; one space after the colon is dropped;
//!   `id:`, `retry:` and unknown fields are ignored; a leading BOM is dropped.
//!
//! Oversized input: one event (its buffered lines plus data) may not exceed
//! [`MAX_EVENT_BYTES`]. Past that the parser drops the whole event, skips input
//! up to the next blank line, and emits one marker event of type
//! [`OVERSIZED_EVENT_TYPE`] (see [`SseEvent::is_oversized`]) so the consumer can
//! fail loudly instead of silently losing data.
//!
//! End of stream: [`SseParser::finish`] dispatches an event whose lines are all
//! complete but which lacks the closing blank line; an unterminated final line
//! is treated as cut off and discarded.

/// Largest event (buffered line plus accumulated data) the parser will hold.
pub const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// Event type of the marker emitted when an event exceeded the size limit.
pub const OVERSIZED_EVENT_TYPE: &str = "durable-chat.sse-oversized";

const BYTE_ORDER_MARK: char = '\u{FEFF}';

/// One dispatched server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the event had a non-empty one.
    pub event: Option<String>,
    /// All `data:` lines of the event joined with `\n`.
    pub data: String,
}

impl SseEvent {
    /// True for the marker the parser emits after dropping an oversized event.
    pub fn is_oversized(&self) -> bool {
        self.event.as_deref() == Some(OVERSIZED_EVENT_TYPE)
    }
}

/// Incremental `text/event-stream` parser; see the module docs for the rules.
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// Data of the event being assembled (lines joined with `\n`).
    data: String,
    has_data: bool,
    event_type: Option<String>,
    /// The previous byte was a `\r`, so a following `\n` belongs to it.
    skip_next_line_feed: bool,
    /// The current line overflowed; drop its bytes until it ends.
    discarding_line: bool,
    /// The current event overflowed; drop lines until the blank line.
    discarding_event: bool,
    seen_first_line: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser with the default [`MAX_EVENT_BYTES`] limit.
    pub fn new() -> Self {
        Self::with_max_event_bytes(MAX_EVENT_BYTES)
    }

    /// A parser with a custom per-event size limit.
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            line: Vec::new(),
            data: String::new(),
            has_data: false,
            event_type: None,
            skip_next_line_feed: false,
            discarding_line: false,
            discarding_event: false,
            seen_first_line: false,
        }
    }

    /// Consumes the next chunk of the body, appending completed events to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.skip_next_line_feed {
                self.skip_next_line_feed = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.buffer_line_bytes(&rest[..end], out);
                    self.skip_next_line_feed = rest[end] == b'\r';
                    rest = &rest[end + 1..];
                    self.end_line(out);
                }
                None => {
                    self.buffer_line_bytes(rest, out);
                    rest = &[];
                }
            }
        }
    }

    /// Signals the end of the body and resets the parser. A pending event made
    /// of complete lines is dispatched; an unterminated last line is discarded.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.discarding_event {
            self.dispatch(out);
        }
        *self = Self::with_max_event_bytes(self.max_event_bytes);
    }

    fn buffer_line_bytes(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        if self.discarding_line || bytes.is_empty() {
            return;
        }
        let event_size = self.data.len() + self.line.len() + bytes.len();
        if event_size > self.max_event_bytes {
            self.drop_oversized_event(out);
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    fn drop_oversized_event(&mut self, out: &mut Vec<SseEvent>) {
        if !self.discarding_event {
            out.push(SseEvent {
                event: Some(OVERSIZED_EVENT_TYPE.to_string()),
                data: String::new(),
            });
        }
        self.line = Vec::new();
        self.data = String::new();
        self.has_data = false;
        self.event_type = None;
        self.discarding_line = true;
        self.discarding_event = true;
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        if self.discarding_line {
            self.discarding_line = false;
            return;
        }
        let bytes = std::mem::take(&mut self.line);
        let decoded = String::from_utf8_lossy(&bytes);
        let mut line: &str = &decoded;
        if !self.seen_first_line {
            self.seen_first_line = true;
            line = line.strip_prefix(BYTE_ORDER_MARK).unwrap_or(line);
        }
        if self.discarding_event {
            self.discarding_event = !line.is_empty();
            return;
        }
        self.process_line(line, out);
    }

    fn process_line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => {
                self.event_type = (!value.is_empty()).then(|| value.to_string());
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event_type.take();
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        out.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut out);
        }
        parser.finish(&mut out);
        out
    }

    fn data(text: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: text.to_string(),
        }
    }

    #[test]
    fn events_are_separated_by_blank_lines() {
        let events = parse_chunks(&[b"data: one\n\ndata: two\n\n"]);
        assert_eq!(events, vec![data("one"), data("two")]);
    }

    #[test]
    fn multi_line_data_is_joined_with_newlines() {
        let events = parse_chunks(&[b"data: first\ndata:second\ndata\n\n"]);
        assert_eq!(events, vec![data("first\nsecond\n")]);
    }

    #[test]
    fn only_one_space_after_the_colon_is_dropped() {
        let events = parse_chunks(&[b"data:  indented\n\n"]);
        assert_eq!(events, vec![data(" indented")]);
    }

    #[test]
    fn crlf_and_lone_cr_line_endings_are_understood() {
        let events = parse_chunks(&[b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"]);
        assert_eq!(events, vec![data("a"), data("b"), data("c")]);
    }

    #[test]
    fn crlf_split_between_feeds_is_one_line_ending() {
        let events = parse_chunks(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
        assert_eq!(events, vec![data("a\nb")]);
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored() {
        let events = parse_chunks(&[b": keep-alive\nid: 7\nretry: 10\nfoo: bar\ndata: x\n\n"]);
        assert_eq!(events, vec![data("x")]);
    }

    #[test]
    fn event_field_names_the_event_and_resets_after_dispatch() {
        let events = parse_chunks(&[b"event: error\ndata: boom\n\ndata: ok\n\n"]);
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: Some("error".into()),
                    data: "boom".into()
                },
                data("ok"),
            ]
        );
    }

    #[test]
    fn blank_lines_without_data_dispatch_nothing() {
        let events = parse_chunks(&[b"\n\n: ping\n\nevent: noise\n\n"]);
        assert!(events.is_empty());
    }

    #[test]
    fn lines_split_across_feeds_are_reassembled() {
        let events = parse_chunks(&[b"da", b"ta: hel", b"lo", b"\n", b"\n"]);
        assert_eq!(events, vec![data("hello")]);
    }

    #[test]
    fn utf8_characters_split_across_feeds_survive() {
        let text = "data: héllo 🌍\n\n".as_bytes();
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(parse_chunks(&chunks), vec![data("héllo 🌍")]);
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let events = parse_chunks(&[b"data: a\xffb\n\n"]);
        assert_eq!(events, vec![data("a\u{FFFD}b")]);
    }

    #[test]
    fn leading_byte_order_mark_is_dropped() {
        let events = parse_chunks(&[b"\xEF\xBB", b"\xBFdata: x\n\n"]);
        assert_eq!(events, vec![data("x")]);
    }

    #[test]
    fn finish_dispatches_an_event_missing_its_blank_line() {
        assert_eq!(parse_chunks(&[b"data: last\n"]), vec![data("last")]);
    }

    #[test]
    fn finish_discards_an_unterminated_last_line() {
        assert_eq!(
            parse_chunks(&[b"data: ok\n\ndata: {\"cut"]),
            vec![data("ok")]
        );
    }

    #[test]
    fn oversized_event_is_dropped_and_reported_once() {
        let mut parser = SseParser::with_max_event_bytes(16);
        let mut out = Vec::new();
        parser.feed(b"data: 0123456789", &mut out);
        parser.feed(b"0123456789\ndata: more\n", &mut out);
        parser.feed(b"\ndata: after\n\n", &mut out);
        parser.finish(&mut out);
        assert_eq!(out.len(), 2);
        assert!(out[0].is_oversized());
        assert_eq!(out[1], data("after"));
    }

    #[test]
    fn many_data_lines_count_towards_the_event_limit() {
        let mut parser = SseParser::with_max_event_bytes(16);
        let mut out = Vec::new();
        parser.feed(b"data: aaaa\ndata: bbbb\ndata: cccc\n\n", &mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0].is_oversized());
    }
}

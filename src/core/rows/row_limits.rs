//! Production's limits on one stored row, shared by every store: SQLite on
//! Durable Objects refuses any string, BLOB or row over 2 MB, so a value that
//! may grow without bound (a message, a chunk-log row, a config row) is
//! written as pieces of at most `PIECE_BYTES` each, split on character
//! boundaries and joined back byte-identical. `check_row` is the refusal
//! itself, applied by the stores before every write so the limit is met by
//! design and a write over it fails here exactly as it would in production.

/// The most a string, a BLOB or a whole row may hold (production's limit).
pub const MAX_ROW_BYTES: usize = 2_000_000;

/// The most one piece of a split value holds; leaves room for the row's
/// other columns under `MAX_ROW_BYTES`.
pub const PIECE_BYTES: usize = 1_000_000;

/// `text` cut into pieces of at most `PIECE_BYTES` bytes, never inside a
/// character; always at least one piece (an empty text is one empty piece).
pub fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > PIECE_BYTES {
        let mut cut = PIECE_BYTES;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (head, tail) = rest.split_at(cut);
        out.push(head);
        rest = tail;
    }
    out.push(rest);
    out
}

/// Refuses a row whose text values are, one or together, over the limit
/// (the error reads like the runtime's).
pub fn check_row(values: &[&str]) -> Result<(), String> {
    let mut total = 0;
    for value in values {
        if value.len() > MAX_ROW_BYTES {
            return Err(format!(
                "string or blob too big: {} bytes (the limit is {MAX_ROW_BYTES})",
                value.len()
            ));
        }
        total += value.len();
    }
    if total > MAX_ROW_BYTES {
        return Err(format!(
            "row too big: {total} bytes (the limit is {MAX_ROW_BYTES})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_join_back_byte_identical_and_stay_under_the_limit() {
        let text = "é€😀a".repeat(600_000);
        let parts = pieces(&text);
        assert!(parts.len() > 1);
        assert!(parts.iter().all(|p| p.len() <= PIECE_BYTES));
        assert_eq!(parts.concat(), text);
        assert_eq!(pieces(""), [""]);
        assert_eq!(pieces("small"), ["small"]);
    }

    #[test]
    fn a_row_over_the_limit_is_refused() {
        let big = "x".repeat(MAX_ROW_BYTES + 1);
        assert!(check_row(&[&big]).is_err());
        let half = "x".repeat(MAX_ROW_BYTES / 2 + 1);
        assert!(check_row(&[&half, &half]).is_err());
        assert!(check_row(&[&half, "id"]).is_ok());
    }
}

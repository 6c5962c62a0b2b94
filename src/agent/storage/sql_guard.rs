//! Keeps the author's SQL away from the engine's tables. The engine's tables
//! (and the key-value store's) are named `chat_…`, the runtime's own
//! `_cf_…` and `sqlite_…`: a statement is refused when any identifier or
//! string literal in it starts with one of these (case-insensitively, quoted
//! or not, since SQLite takes a quoted string as a table name), or when it
//! uses `PRAGMA`, `ATTACH` or `DETACH`. Every other name is the author's.
//! A value that must contain such text is passed as a binding.

/// Name prefixes reserved for the engine and the runtime.
pub const RESERVED_PREFIXES: [&str; 3] = ["chat_", "_cf_", "sqlite_"];
/// Statements the author may not run.
const REFUSED_WORDS: [&str; 3] = ["pragma", "attach", "detach"];

/// `Err` with the reason when `query` names a reserved table or runs a
/// refused statement.
pub fn check_author_sql(query: &str) -> Result<(), String> {
    for token in tokens(query) {
        let lower = token.to_ascii_lowercase();
        if let Some(prefix) = RESERVED_PREFIXES.iter().find(|p| lower.starts_with(*p)) {
            return Err(format!(
                "`{token}`: names starting with `{prefix}` belong to the engine; name your tables otherwise"
            ));
        }
        if REFUSED_WORDS.contains(&lower.as_str()) {
            return Err(format!("`{token}` statements are not allowed"));
        }
    }
    Ok(())
}

/// Words, quoted identifiers (`"…"`, `` `…` ``, `[…]`) and string literals
/// (`'…'`) of `query`, comments skipped.
fn tokens(query: &str) -> Vec<String> {
    let chars: Vec<char> = query.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if matches!(c, '"' | '`' | '\'' | '[') {
            let close = if c == '[' { ']' } else { c };
            let mut text = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i] == close {
                    // A doubled quote is a quote inside the name.
                    if close != ']' && chars.get(i + 1) == Some(&close) {
                        text.push(close);
                        i += 2;
                        continue;
                    }
                    break;
                }
                text.push(chars[i]);
                i += 1;
            }
            i += 1;
            out.push(text.trim().to_string());
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::check_author_sql;

    #[test]
    fn the_authors_own_tables_pass() {
        for q in [
            "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT)",
            "INSERT INTO notes (text) VALUES (?)",
            "SELECT * FROM notes WHERE text LIKE 'chat%'",
            "-- a comment naming chat_messages\nSELECT 1",
            "SELECT 1 /* chat_config */",
        ] {
            assert_eq!(check_author_sql(q), Ok(()), "{q}");
        }
    }

    #[test]
    fn engine_and_runtime_tables_are_refused_however_quoted() {
        for q in [
            "DELETE FROM chat_messages",
            "drop table CHAT_CONFIG",
            "SELECT * FROM \"chat_messages\"",
            "SELECT * FROM `chat_streams`",
            "SELECT * FROM [chat_pieces]",
            "DROP TABLE 'chat_messages'",
            "SELECT * FROM main.chat_messages",
            "SELECT name FROM sqlite_master",
            "SELECT * FROM _cf_KV",
            "CREATE TRIGGER t AFTER INSERT ON notes BEGIN DELETE FROM chat_messages; END",
        ] {
            let refused = check_author_sql(q).err().unwrap_or_default();
            assert!(refused.contains("belong to the engine"), "{q}: {refused}");
        }
    }

    #[test]
    fn pragma_and_attach_are_refused() {
        for q in [
            "PRAGMA writable_schema = 1",
            "ATTACH DATABASE 'x' AS y",
            "detach y",
        ] {
            assert!(check_author_sql(q).is_err(), "{q}");
        }
    }
}

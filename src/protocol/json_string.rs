//! Decoding one JSON string literal into one buffer of the right size.
//!
//! A chat request carries its body as a JSON string inside the frame, so
//! the body's text must be unescaped before it is read. Decoding it through
//! serde grows a scratch buffer by doubling and then copies it into the
//! string it returns: for a frame near its size limit that is several
//! times the body held at once, and wasm memory never gives it back. Here
//! the output is allocated once, no larger than the escaped text (an escape
//! never decodes to more bytes than it is written with), and filled in one
//! pass.

/// The text of the JSON string literal `raw` (with its quotes, as a
/// `RawValue` holds it), or `None` when `raw` is not one: not quoted, an
/// unknown escape, a bad `\u` escape or a lone surrogate (which serde
/// refuses as well). Never panics.
pub fn decode(raw: &str) -> Option<String> {
    let inner = raw.trim().strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return (!inner.contains('"')).then(|| inner.to_string());
    }
    let mut out = String::with_capacity(inner.len());
    let mut rest = inner;
    while let Some(at) = rest.find(['\\', '"']) {
        out.push_str(&rest[..at]);
        if rest.as_bytes()[at] == b'"' {
            return None;
        }
        let escape = &rest[at + 1..];
        let (decoded, used) = match escape.as_bytes().first()? {
            b'"' => ('"', 1),
            b'\\' => ('\\', 1),
            b'/' => ('/', 1),
            b'b' => ('\u{8}', 1),
            b'f' => ('\u{c}', 1),
            b'n' => ('\n', 1),
            b'r' => ('\r', 1),
            b't' => ('\t', 1),
            b'u' => unicode_escape(escape)?,
            _ => return None,
        };
        out.push(decoded);
        rest = &escape[used..];
    }
    out.push_str(rest);
    Some(out)
}

/// The character of a `u` escape at the start of `escape` (after its
/// backslash) and how many bytes it used: a pair of escapes for a
/// character outside the basic plane.
fn unicode_escape(escape: &str) -> Option<(char, usize)> {
    let first = hex4(escape.get(1..5)?)?;
    match first {
        0xD800..=0xDBFF => {
            escape.get(5..7).filter(|s| *s == "\\u")?;
            let second = hex4(escape.get(7..11)?).filter(|c| (0xDC00..=0xDFFF).contains(c))?;
            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            Some((char::from_u32(code)?, 11))
        }
        0xDC00..=0xDFFF => None,
        _ => Some((char::from_u32(first)?, 5)),
    }
}

fn hex4(digits: &str) -> Option<u32> {
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde makes of the same literal.
    fn serde(raw: &str) -> Option<String> {
        serde_json::from_str::<String>(raw).ok()
    }

    #[test]
    fn decodes_as_serde_does() {
        for raw in [
            r#""""#,
            r#""plain text""#,
            r#""{\"messages\":[{\"id\":\"u1\"}],\"x\":\"a\\\"b\"}""#,
            r#""tab\there\nline\r\f\b\/slash\\""#,
            r#""\u00e9t\u00C9 \u2603 \ud83d\ude00 end""#,
            r#""emoji 😀 and é as they are""#,
            r#"  "padded"  "#,
        ] {
            assert_eq!(decode(raw), serde(raw), "{raw}");
            assert!(decode(raw).is_some(), "{raw}");
        }
    }

    #[test]
    fn refuses_what_serde_refuses() {
        for raw in [
            "not quoted",
            r#""unterminated"#,
            r#""bad \q escape""#,
            r#""short \u12""#,
            r#""not hex \u12g4""#,
            r#""lone high \ud800 x""#,
            r#""lone low \udc00 x""#,
            r#""high then not low \ud800\u0041""#,
            r#""trailing backslash \""#,
            r#""inner " quote""#,
            "\"",
        ] {
            assert_eq!(decode(raw), None, "{raw}");
            assert_eq!(serde(raw), None, "{raw}");
        }
    }

    #[test]
    fn the_output_is_allocated_once_no_larger_than_the_escaped_text() {
        let body = format!("{{\"messages\":[{}]}}", vec!["0"; 100_000].join(","));
        let raw = serde_json::to_string(&body).unwrap();
        let decoded = decode(&raw).unwrap();
        assert_eq!(decoded, body);
        assert!(decoded.capacity() <= raw.len());
    }
}

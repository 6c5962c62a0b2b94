//! The shape of raw JSON text, measured before any of it is built: how many
//! values it holds and how deeply they nest, in one pass over its bytes
//! that allocates nothing per value. A `serde_json::Value` costs tens of
//! bytes however small its text (`0,` is two bytes), so a frame within its
//! byte limit can still make the agent build millions of values; this scan
//! refuses such text first (`Limits::max_message_values`,
//! `Limits::max_message_depth`).
//!
//! It counts, it does not validate: every array, object, string value,
//! number, `true`, `false` and `null` is one value (object keys are not);
//! text that is not JSON is refused only when its brackets or strings do
//! not close, and otherwise left to the parser that reads it next.

/// The most values and the deepest nesting a text may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeLimits {
    pub max_values: usize,
    pub max_depth: usize,
}

impl ShapeLimits {
    /// No limit.
    pub const NONE: ShapeLimits = ShapeLimits {
        max_values: usize::MAX,
        max_depth: usize::MAX,
    };
}

/// What a text within its limits holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    pub values: usize,
    pub depth: usize,
}

/// Why a text was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShapeError {
    /// More than `limit` values (counting stopped there).
    TooManyValues { limit: usize },
    /// Nested deeper than `limit`.
    TooDeep { limit: usize },
    /// Its brackets or strings do not close (or close what was not opened).
    Malformed,
}

impl ShapeError {
    /// The refusal as a reader sees it, naming what was refused (`what`).
    pub fn describe(self, what: &str) -> String {
        match self {
            ShapeError::TooManyValues { limit } => {
                format!("{what}: too many JSON values (limit {limit})")
            }
            ShapeError::TooDeep { limit } => {
                format!("{what}: JSON nested too deeply (limit {limit} levels)")
            }
            ShapeError::Malformed => format!("{what}: not valid JSON"),
        }
    }
}

/// Scans `text` once; refuses it as soon as it goes past `limits`.
pub fn measure(text: &str, limits: ShapeLimits) -> Result<Shape, ShapeError> {
    let bytes = text.as_bytes();
    // The open containers, innermost last: `true` for an object. Its length
    // never passes `max_depth`, so it is bounded whatever the text.
    let mut open: Vec<bool> = Vec::new();
    let mut shape = Shape::default();
    // Inside an object, the next string is a key (after `{` or `,`).
    let mut expect_key = false;
    let mut i = 0;
    let count = |shape: &mut Shape| -> Result<(), ShapeError> {
        shape.values += 1;
        if shape.values > limits.max_values {
            return Err(ShapeError::TooManyValues {
                limit: limits.max_values,
            });
        }
        Ok(())
    };
    while i < bytes.len() {
        match bytes[i] {
            b'[' | b'{' => {
                count(&mut shape)?;
                if open.len() >= limits.max_depth {
                    return Err(ShapeError::TooDeep {
                        limit: limits.max_depth,
                    });
                }
                let object = bytes[i] == b'{';
                open.push(object);
                shape.depth = shape.depth.max(open.len());
                expect_key = object;
                i += 1;
            }
            b']' | b'}' => {
                let object = bytes[i] == b'}';
                if open.pop() != Some(object) {
                    return Err(ShapeError::Malformed);
                }
                expect_key = false;
                i += 1;
            }
            b',' => {
                expect_key = open.last() == Some(&true);
                i += 1;
            }
            b':' => {
                expect_key = false;
                i += 1;
            }
            b'"' => {
                if !expect_key {
                    count(&mut shape)?;
                }
                expect_key = false;
                i = string_end(bytes, i + 1).ok_or(ShapeError::Malformed)?;
            }
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            _ => {
                // A number or a literal: one value, up to the next delimiter.
                count(&mut shape)?;
                expect_key = false;
                while i < bytes.len() && !is_delimiter(bytes[i]) {
                    i += 1;
                }
            }
        }
    }
    if !open.is_empty() {
        return Err(ShapeError::Malformed);
    }
    Ok(shape)
}

/// Refuses `text` (`what` names it in the error) when it holds more values
/// or nesting than `limits`. Text whose brackets or strings do not close is
/// let through: the parser that reads it next says what is wrong.
pub fn check(text: &str, limits: ShapeLimits, what: &str) -> Result<(), String> {
    match measure(text, limits) {
        Ok(_) | Err(ShapeError::Malformed) => Ok(()),
        Err(error) => Err(error.describe(what)),
    }
}

/// Where a string whose text starts at `from` (after its opening quote)
/// ends, past its closing quote; `None` when it does not close.
fn string_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return Some(i + 1),
            // An escape: the next byte is taken as it is (`\"`, `\\`, …).
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    None
}

fn is_delimiter(b: u8) -> bool {
    matches!(
        b,
        b'[' | b']' | b'{' | b'}' | b',' | b':' | b'"' | b' ' | b'\t' | b'\n' | b'\r'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> Result<Shape, ShapeError> {
        measure(text, ShapeLimits::NONE)
    }

    #[test]
    fn counts_every_value_but_object_keys() {
        assert_eq!(
            shape("0"),
            Ok(Shape {
                values: 1,
                depth: 0
            })
        );
        assert_eq!(
            shape("[0,0,0]"),
            Ok(Shape {
                values: 4,
                depth: 1
            })
        );
        assert_eq!(
            shape(r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#),
            Ok(Shape {
                values: 8,
                depth: 2
            })
        );
        assert_eq!(
            shape(" [ ] "),
            Ok(Shape {
                values: 1,
                depth: 1
            })
        );
        assert_eq!(
            shape("[-1.5e+3, 2E-2 ,0]"),
            Ok(Shape {
                values: 4,
                depth: 1
            })
        );
    }

    #[test]
    fn brackets_quotes_and_escapes_inside_strings_are_text() {
        let text = r#"{"k[{":"]}\"[[[,,,\\","x":"\u005b"}"#;
        assert_eq!(
            shape(text),
            Ok(Shape {
                values: 3,
                depth: 1
            })
        );
        assert_eq!(
            shape(r#"["\\"]"#),
            Ok(Shape {
                values: 2,
                depth: 1
            })
        );
        assert_eq!(
            shape(r#"["a\"]"]"#),
            Ok(Shape {
                values: 2,
                depth: 1
            })
        );
    }

    #[test]
    fn refuses_past_the_value_limit() {
        let limits = ShapeLimits {
            max_values: 4,
            max_depth: 8,
        };
        assert!(measure("[0,0,0]", limits).is_ok());
        assert_eq!(
            measure("[0,0,0,0]", limits),
            Err(ShapeError::TooManyValues { limit: 4 })
        );
        let zeros = format!("[{}0]", "0,".repeat(2_000_000));
        let limits = ShapeLimits {
            max_values: 300_000,
            max_depth: 64,
        };
        assert_eq!(
            measure(&zeros, limits),
            Err(ShapeError::TooManyValues { limit: 300_000 })
        );
    }

    #[test]
    fn refuses_past_the_depth_limit() {
        let limits = ShapeLimits {
            max_values: 1_000,
            max_depth: 3,
        };
        assert_eq!(
            measure("[[[0]]]", limits),
            Ok(Shape {
                values: 4,
                depth: 3
            })
        );
        assert_eq!(
            measure("[[[[0]]]]", limits),
            Err(ShapeError::TooDeep { limit: 3 })
        );
        assert_eq!(
            measure(r#"{"a":{"b":{"c":{}}}}"#, limits),
            Err(ShapeError::TooDeep { limit: 3 })
        );
        // Deep text is refused at the limit, whatever its length.
        let deep = "[".repeat(1_000_000);
        assert_eq!(
            measure(&deep, limits),
            Err(ShapeError::TooDeep { limit: 3 })
        );
    }

    #[test]
    fn unclosed_or_mismatched_text_is_malformed() {
        for bad in ["[", "[0}", "{]", "]", r#"["open"#, r#"{"a":"\"}"#, "[0]]"] {
            assert_eq!(shape(bad), Err(ShapeError::Malformed), "{bad}");
        }
        // Other mistakes are the parser's to find; the scan stays bounded.
        assert!(shape("[0 0 ,, tru]").is_ok());
    }

    #[test]
    fn describes_each_refusal() {
        let text = ShapeError::TooManyValues { limit: 5 }.describe("the messages");
        assert_eq!(text, "the messages: too many JSON values (limit 5)");
        assert!(ShapeError::TooDeep { limit: 2 }
            .describe("x")
            .contains("nested too deeply"));
    }
}

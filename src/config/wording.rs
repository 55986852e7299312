//! What is wrong with a value, in the user's words: serde's and figment's
//! messages name Rust types (`expected u64`, `found map`), which a user
//! editing a TOML file or an environment variable has never seen.

use figment::error::{Actual, Kind};
use figment::value::{Num, Value};

/// What a key of this default's type takes, as a phrase.
pub(crate) fn expected_for(default: &Value) -> &'static str {
    match default {
        Value::String(..) | Value::Char(..) => "a string",
        Value::Bool(..) => "true or false",
        Value::Num(..) => "a whole number (0 or more)",
        Value::Array(..) => "a list of strings",
        Value::Dict(..) => "a table",
        Value::Empty(..) => "a value",
    }
}

/// What a value is, as a phrase: `text`, `a negative number`, …
pub(crate) fn found(value: &Value) -> &'static str {
    match value {
        Value::String(..) | Value::Char(..) => "text",
        Value::Bool(..) => "true or false",
        Value::Num(_, n) => match n {
            Num::F32(_) | Num::F64(_) => "a number with a fraction",
            n if n.to_i128().is_some_and(|i| i < 0) => "a negative number",
            _ => "a number",
        },
        Value::Array(..) => "a list",
        Value::Dict(..) => "a table",
        Value::Empty(..) => "nothing",
    }
}

/// `expected …, found …`.
pub(crate) fn mismatch(default: &Value, value: &Value) -> String {
    format!("expected {}, found {}", expected_for(default), found(value))
}

/// serde's name of an expected type (`u64`, `a boolean`, `struct
/// RawProject`), as a phrase.
fn expected_words(serde: &str) -> String {
    let words = match serde {
        s if s.starts_with('u') && s[1..].bytes().all(|b| b.is_ascii_digit()) => {
            "a whole number (0 or more)"
        }
        s if s.starts_with('i') && s[1..].bytes().all(|b| b.is_ascii_digit()) => "a whole number",
        "a boolean" | "bool" => "true or false",
        "a string" | "string" | "a borrowed string" => "a string",
        "a sequence" => "a list",
        s if s.starts_with("struct ") || s == "a map" => "a table",
        other => return other.to_string(),
    };
    words.to_string()
}

fn actual_words(a: &Actual) -> String {
    match a {
        Actual::Bool(_) => "true or false".into(),
        Actual::Unsigned(_) => "a number".into(),
        Actual::Signed(n) if *n < 0 => "a negative number".into(),
        Actual::Signed(_) => "a number".into(),
        Actual::Float(_) => "a number with a fraction".into(),
        Actual::Char(_) | Actual::Str(_) => "text".into(),
        Actual::Seq => "a list".into(),
        Actual::Map => "a table".into(),
        Actual::Unit | Actual::Option => "nothing".into(),
        other => other.to_string(),
    }
}

/// A figment error's kind as a phrase, without Rust types.
pub(crate) fn kind(k: &Kind) -> String {
    match k {
        Kind::InvalidType(actual, expected) | Kind::InvalidValue(actual, expected) => format!(
            "expected {}, found {}",
            expected_words(expected),
            actual_words(actual)
        ),
        Kind::UnknownField(_, expected) => {
            format!("unknown key; expected one of {}", expected.join(", "))
        }
        Kind::MissingField(name) => format!("{name} is missing"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rust_type_names() {
        let k = Kind::InvalidType(Actual::Str("lots".into()), "u64".into());
        assert_eq!(kind(&k), "expected a whole number (0 or more), found text");
        let k = Kind::InvalidValue(Actual::Signed(-1), "u64".into());
        assert_eq!(
            kind(&k),
            "expected a whole number (0 or more), found a negative number"
        );
        let k = Kind::InvalidType(Actual::Map, "a boolean".into());
        assert_eq!(kind(&k), "expected true or false, found a table");
        let k = Kind::InvalidType(Actual::Unsigned(3), "struct RawProject".into());
        assert_eq!(kind(&k), "expected a table, found a number");
    }

    #[test]
    fn values_are_described() {
        let d = Value::from(1u64);
        assert_eq!(
            mismatch(&d, &Value::from("x")),
            "expected a whole number (0 or more), found text"
        );
        assert_eq!(found(&Value::from(-3i64)), "a negative number");
        assert_eq!(found(&Value::from(2.5f64)), "a number with a fraction");
        assert_eq!(
            mismatch(&Value::from(true), &Value::from(3u64)),
            "expected true or false, found a number"
        );
    }
}

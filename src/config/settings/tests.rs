//! Names, enums and log levels as the configuration checks them.

use super::*;

#[test]
fn names_are_checked() {
    assert!(validate_name("session id", "1744276689123456789-2b986c").is_ok());
    assert!(validate_name("session id", "a.b").is_ok());
    // One path component named `a..b` climbs nowhere.
    assert!(validate_name("session id", "a..b").is_ok());
    for bad in ["", ".", "..", "a/b", "x\0y"] {
        let err = validate_name("session id", bad).unwrap_err();
        assert!(err.starts_with("session id "), "{bad:?}: {err}");
    }
    assert!(validate_name("mount", &"m".repeat(255)).is_ok());
    assert!(validate_name("mount", &"m".repeat(256))
        .unwrap_err()
        .contains("255"));
}

#[test]
fn enums_parse_and_print() {
    assert_eq!("queue".parse::<Mode>(), Ok(Mode::Queue));
    assert_eq!("jsonl".parse::<Framing>(), Ok(Framing::Jsonl));
    assert_eq!(LogTarget::Journald.to_string(), "journald");
    let err = "loud".parse::<LogTarget>().unwrap_err();
    assert_eq!(err, "expected one of auto, journald, stderr");
}

#[test]
fn log_level_rejects_bare_words() {
    assert_eq!(log_level("INFO").unwrap(), "info");
    assert!(log_level("reveille=debug,warn").is_ok());
    assert!(log_level("verbose").is_err());
}

//! Names that come from data — session ids in plan files, assignee mappings,
//! mount names in tracker events — become path components under a root.
//! This is the one check every such name passes before it is used, so that
//! no data can steer a write outside `sessions_dir` or `beads_root`.

/// The longest name accepted, in bytes: one path component on Linux.
pub const MAX_NAME_BYTES: usize = 255;

/// Why a name was refused.
pub fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("is empty");
    }
    if name.len() > MAX_NAME_BYTES {
        return Err("is longer than 255 bytes");
    }
    if name == "." || name == ".." {
        return Err("is a relative directory name");
    }
    if name.contains('/') {
        return Err("contains '/'");
    }
    if name.contains('\0') {
        return Err("contains a NUL byte");
    }
    if name.chars().any(char::is_control) {
        return Err("contains a control character");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_name;

    #[test]
    fn names_that_climb_out_are_refused() {
        for bad in ["", ".", "..", "../x", "a/b", "/etc", "a\0b", "a\nb"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_name(&"x".repeat(256)).is_err());
    }

    #[test]
    fn ordinary_ids_pass() {
        for good in ["1744276689123456789-2b986c", "agent-1", "..x", "x..", "a b"] {
            assert!(check_name(good).is_ok(), "{good:?} refused");
        }
        assert!(check_name(&"x".repeat(255)).is_ok());
    }
}

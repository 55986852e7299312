//! What the engine calls an opencode session, and what opencode calls it.
//!
//! A session a person made is named by opencode's own id (`ses_` + 12 hex
//! digits + 14 base62 characters: never a `.`). A child reveille made for
//! a step is named by the engine (`core/engine/children.rs`: the parent's
//! id, `.`, the step, `-`, a hash), because the engine must know its name
//! before it exists; opencode picks the child's id itself (`POST /session`
//! takes no id), so the backend finds the child again by the title it gave
//! it, `reveille child <name>`, among its parent's children.

use crate::core::session::Kind;

/// One session, as the engine addressed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name<'a> {
    /// opencode's own id (bare).
    Own(&'a str),
    /// A child reveille made: the engine's name for it (qualified, as the
    /// engine says it) and its parent's own id (bare).
    Child { name: &'a str, parent: &'a str },
}

/// Read a qualified session id, or say why it names no opencode session.
pub fn parse(session: &str) -> Result<Name<'_>, String> {
    let id = match Kind::of(session) {
        (Kind::Opencode, id) => id,
        (kind, _) => {
            return Err(format!(
                "{session:?} is a {} session, not an opencode one",
                kind.name()
            ))
        }
    };
    if !id.starts_with("ses") {
        return Err(format!(
            "{id:?} is not an opencode session id (they start with \"ses_\"; `opencode session list` shows them)"
        ));
    }
    Ok(match id.split_once('.') {
        Some((parent, _)) => Name::Child {
            name: session,
            parent,
        },
        None => Name::Own(id),
    })
}

/// The title of the child the engine calls `name` (qualified).
pub fn child_title(name: &str) -> String {
    format!("reveille child {name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_ids_and_child_names_are_told_apart() {
        assert_eq!(
            parse("opencode:ses_dcaff10cfffeKSNLhV5FCwZBtA"),
            Ok(Name::Own("ses_dcaff10cfffeKSNLhV5FCwZBtA"))
        );
        assert_eq!(
            parse("opencode:ses_abc.s2-0123456789ab"),
            Ok(Name::Child {
                name: "opencode:ses_abc.s2-0123456789ab",
                parent: "ses_abc"
            })
        );
        let not = parse("opencode:abc").unwrap_err();
        assert!(not.contains("not an opencode session id"), "{not}");
        let other = parse("codex:ses_abc").unwrap_err();
        assert!(other.contains("a codex session"), "{other}");
    }
}

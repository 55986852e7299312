//! The id reveille gives each prompt it puts in a Codex thread: the
//! `clientUserMessageId` of `thread/queue/add`, which Codex keeps with the
//! queued submission and gives back as the user message's `clientId` when
//! a turn starts on it — in the `item/started` notification and in the
//! thread's stored history. Derived from the project and the prompt's
//! sequence number only, so the same prompt has the same id after a
//! reveille restart, and a thread shared by two projects tells their
//! prompts apart.

/// `reveille:<project>:<seq>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptIds {
    prefix: String,
}

impl PromptIds {
    pub fn new(project: &str) -> PromptIds {
        PromptIds {
            prefix: format!("reveille:{project}:"),
        }
    }

    /// The id of prompt `seq`.
    pub fn id(&self, seq: u64) -> String {
        format!("{}{seq}", self.prefix)
    }

    /// The prompt an id names, if it is one of this project's.
    pub fn seq(&self, id: &str) -> Option<u64> {
        let seq = id.strip_prefix(&self.prefix)?;
        if seq.starts_with('+') {
            return None;
        }
        seq.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::PromptIds;

    #[test]
    fn an_id_names_its_project_and_sequence_number_and_nothing_else() {
        let ids = PromptIds::new("myproj");
        assert_eq!(ids.id(42), "reveille:myproj:42");
        assert_eq!(ids.seq("reveille:myproj:42"), Some(42));
        assert_eq!(ids.seq(&ids.id(u64::MAX)), Some(u64::MAX));
        for other in [
            "reveille:other:42",
            "reveille:myproj:",
            "reveille:myproj:+1",
            "reveille:myproj:4 2",
            "4d2818c2-935a-420b-b205-e10af9b13b67",
        ] {
            assert_eq!(ids.seq(other), None, "{other}");
        }
        assert_eq!(PromptIds::new("my").seq("reveille:myproj:1"), None);
    }
}

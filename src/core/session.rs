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

/// Which kind of agent a session id names. A bare id is a directory
/// under `sessions.dir` (an ollie-9p session, a named pipe, a file: what
/// the directory holds decides); an id qualified by its kind —
/// `codex:<thread>`, `claude:<session>`, `opencode:<session>` — names a
/// session of that agent program (SPEC §10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A directory under `sessions.dir`.
    Dir,
    /// A Codex thread, reached through its app-server.
    Codex,
    /// A Claude Code session, reached through its messaging socket.
    Claude,
    /// An opencode session, reached through the server that owns it.
    Opencode,
}

impl Kind {
    /// The kinds that qualify an id, with their prefixes.
    const QUALIFIED: [(Kind, &'static str); 3] = [
        (Kind::Codex, "codex:"),
        (Kind::Claude, "claude:"),
        (Kind::Opencode, "opencode:"),
    ];

    /// The kind a session id names, and the id within that kind.
    pub fn of(session: &str) -> (Kind, &str) {
        for (kind, prefix) in Kind::QUALIFIED {
            if let Some(id) = session.strip_prefix(prefix) {
                return (kind, id);
            }
        }
        (Kind::Dir, session)
    }

    /// The kind's name, as journal entries and `status` show it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Dir => "dir",
            Kind::Codex => "codex",
            Kind::Claude => "claude",
            Kind::Opencode => "opencode",
        }
    }

    /// Whether the agent would fold a prompt given during a turn into that
    /// turn (opencode: a queued prompt rides along with the next model
    /// call of a running tool loop), so it may only be given one while it
    /// is idle. The others run a prompt given during a turn after it.
    pub fn waits_for_idle(self) -> bool {
        self == Kind::Opencode
    }

    /// `<kind>:<id>`, or the bare id of a directory session.
    pub fn qualify(self, id: &str) -> String {
        match Kind::QUALIFIED.iter().find(|(k, _)| *k == self) {
            Some((_, prefix)) => format!("{prefix}{id}"),
            None => id.to_string(),
        }
    }
}

/// Why a session id from data (a plan, a config, an event) is refused. A
/// directory session's id becomes a path component (`check_name`); a
/// qualified one never touches the file system, but must still be a
/// bounded, printable, non-empty name.
pub fn check_session(session: &str) -> Result<(), &'static str> {
    match Kind::of(session) {
        (Kind::Dir, id) => check_name(id),
        (_, id) if id.trim().is_empty() => Err("names no session after its kind"),
        (_, id) if id.len() > MAX_NAME_BYTES => Err("is longer than 255 bytes"),
        (_, id) if id.chars().any(char::is_control) => Err("contains a control character"),
        _ => Ok(()),
    }
}

/// What an agent session is doing, as ollie-9p reports it (`cfg`'s
/// `state=`, the legacy `state` file, a column of `s/idx`): `idle`,
/// `thinking`, `calling: <tool>`, `compacting`, `limitretry`; or, as the
/// other agent programs say it, waiting for a person. Only the difference
/// between idle and not idle decides delivery and reminders; a wait for a
/// person is told to the person as well; the rest is shown.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AgentState {
    /// No turn is running: a Submit starts one at once.
    Idle,
    /// A turn is running (the state text as reported: `thinking`,
    /// `calling: grep`, …); a Submit is queued behind it.
    Busy(String),
    /// A turn stopped halfway for its user: a permission prompt, a
    /// question (SPEC §12). Busy as far as prompts and reminders go —
    /// only a person moves it on.
    Waiting(Wait),
}

/// What a session waits for a person to do.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Wait {
    pub on: WaitOn,
    /// The command or tool to approve, or the question asked; empty when
    /// the agent does not say.
    pub what: String,
}

/// The two things an agent waits for a person for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WaitOn {
    /// To approve (or deny) a tool call or a command.
    Approval,
    /// To answer a question.
    Question,
}

impl WaitOn {
    /// As the journal's `WAITING=` says it.
    pub fn name(self) -> &'static str {
        match self {
            WaitOn::Approval => "approval",
            WaitOn::Question => "question",
        }
    }
}

/// How much of a command or question a one-line state shows.
const SHOWN_CHARS: usize = 60;

impl Wait {
    pub fn approval(what: impl Into<String>) -> Wait {
        Wait {
            on: WaitOn::Approval,
            what: what.into(),
        }
    }

    pub fn question(what: impl Into<String>) -> Wait {
        Wait {
            on: WaitOn::Question,
            what: what.into(),
        }
    }

    /// What the person is asked to do, on one line: ``approve `sed -i …` ``,
    /// `answer: Which one?`, or `approve a tool call` when the agent does
    /// not say which.
    pub fn ask(&self) -> String {
        let what = one_line(&self.what);
        match (self.on, what.is_empty()) {
            (WaitOn::Approval, true) => "approve a tool call".into(),
            (WaitOn::Approval, false) => format!("approve `{what}`"),
            (WaitOn::Question, true) => "answer a question".into(),
            (WaitOn::Question, false) => format!("answer: {what}"),
        }
    }
}

/// The first line of `text`, cut to `SHOWN_CHARS` with `…` where anything
/// was left out.
fn one_line(text: &str) -> String {
    let text = text.trim();
    let first = text.lines().next().unwrap_or("").trim_end();
    let mut out: String = first.chars().take(SHOWN_CHARS).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

impl AgentState {
    /// Parse a reported state (trimmed); an empty text is not a state.
    pub fn parse(text: &str) -> Option<AgentState> {
        match text.trim() {
            "" => None,
            "idle" => Some(AgentState::Idle),
            busy => Some(AgentState::Busy(busy.to_string())),
        }
    }

    pub fn is_idle(&self) -> bool {
        *self == AgentState::Idle
    }

    /// What the session waits for a person for, if it does.
    pub fn waiting(&self) -> Option<&Wait> {
        match self {
            AgentState::Waiting(w) => Some(w),
            _ => None,
        }
    }

    /// The state as ollie-9p writes it; a wait for a person as
    /// ``waiting for a person: approve `sed -i …` ``.
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        match self {
            AgentState::Idle => "idle".into(),
            AgentState::Busy(s) => s.as_str().into(),
            AgentState::Waiting(w) => format!("waiting for a person: {}", w.ask()).into(),
        }
    }
}

/// Serialized as ollie-9p writes it (`"idle"`, `"calling: grep"`).
impl serde::Serialize for AgentState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_str())
    }
}

impl std::fmt::Display for AgentState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::{check_name, check_session, AgentState, Kind, Wait};

    #[test]
    fn a_wait_for_a_person_says_what_is_asked_on_one_short_line() {
        let long = format!("sed -i s/a/b/ {}\necho done", "x".repeat(80));
        let w = AgentState::Waiting(Wait::approval(long));
        let shown = w.to_string();
        assert!(shown.starts_with("waiting for a person: approve `sed -i s/a/b/ x"));
        assert!(shown.ends_with("…`"), "{shown}");
        assert!(!shown.contains('\n'));
        assert_eq!(Wait::approval("ls").ask(), "approve `ls`");
        assert_eq!(Wait::approval("").ask(), "approve a tool call");
        assert_eq!(Wait::question("Which?").ask(), "answer: Which?");
        assert!(!w.is_idle());
    }

    #[test]
    fn agent_states_are_idle_or_busy() {
        assert_eq!(AgentState::parse(" idle\n"), Some(AgentState::Idle));
        assert_eq!(
            AgentState::parse("calling: grep"),
            Some(AgentState::Busy("calling: grep".into()))
        );
        assert_eq!(AgentState::parse("\n"), None);
        assert!(!AgentState::parse("thinking").unwrap().is_idle());
    }

    #[test]
    fn names_that_climb_out_are_refused() {
        for bad in ["", ".", "..", "../x", "a/b", "/etc", "a\0b", "a\nb"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_name(&"x".repeat(256)).is_err());
    }

    #[test]
    fn qualified_ids_name_their_kind_and_bare_ids_a_directory() {
        assert_eq!(Kind::of("codex:019a-b"), (Kind::Codex, "019a-b"));
        assert_eq!(Kind::of("claude:5f0e"), (Kind::Claude, "5f0e"));
        assert_eq!(Kind::of("opencode:ses_1"), (Kind::Opencode, "ses_1"));
        assert_eq!(Kind::of("1744-2b98"), (Kind::Dir, "1744-2b98"));
        assert_eq!(Kind::Codex.qualify("my thread"), "codex:my thread");
        assert_eq!(Kind::Dir.qualify("a"), "a");
        assert!(check_session("codex:my thread/with slash").is_ok());
        for bad in ["codex:", "claude: ", "opencode:a\nb", "../x", "a/b"] {
            assert!(check_session(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn ordinary_ids_pass() {
        for good in ["1744276689123456789-2b986c", "agent-1", "..x", "x..", "a b"] {
            assert!(check_name(good).is_ok(), "{good:?} refused");
        }
        assert!(check_name(&"x".repeat(255)).is_ok());
    }
}

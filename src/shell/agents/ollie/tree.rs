//! The ollie-9p session tree as a whole: which sessions exist and what each
//! is doing, from one read of `<sessions_dir>/idx` per state poll, and the
//! session checklists (`<id>/plan`) that this makes cheap to follow.
//!
//! Why `idx` and not `statewait`: one read of `idx` gives every session's
//! state (`id\tstate\tcwd\tbackend\tmodel` per line), so following N idle
//! sessions costs the same few file-system requests per poll as following
//! one. `statewait` is one blocking read per session, each returning at
//! least every ~5 s, so its cost grows with every session — on a real
//! mount each request is a round trip to the 9P server.
//!
//! Session checklists: a session's own `plan` changes only while the agent
//! works (a turn is running), so it is read on every poll only while the
//! session is busy, once more when it goes idle (the turn's last tick), and
//! once when the session appears. Its content is compared, not its
//! metadata: 9P servers report fixed mtimes and sizes that need not change.

use crate::core::session::{check_name, AgentState};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};

/// `idx` files larger than this are refused (100,000 sessions at 80 bytes).
pub(super) const IDX_CAP: u64 = 8 << 20;

/// What one poll of the tree found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeChange {
    /// A listed session and its state, every poll, changed or not: the
    /// engine owns what a session is, and this read is only one look at
    /// it (a delivery's own reads are others). `new`: not listed before.
    /// `from`: the state the listing before showed, when it differed
    /// (for the journal only).
    Listed {
        session: String,
        state: AgentState,
        new: bool,
        from: Option<AgentState>,
    },
    /// A listed session is no longer listed (killed, or renamed with `rn`).
    Gone(String),
    /// A session's checklist has new content: read it.
    PlanChanged(PathBuf),
}

/// The session tree of an ollie-9p mount.
#[derive(Debug)]
pub struct SessionTree {
    dir: PathBuf,
    /// The last `idx` content, so an unchanged one costs no parsing.
    last: Option<Vec<u8>>,
    /// What that content lists: each session's state in it. Only the
    /// last read, never compared with the next to filter what is told:
    /// it says which sessions went, and whose checklists to read.
    listed: BTreeMap<String, AgentState>,
    /// A hash of each session checklist's last content.
    plans: BTreeMap<String, u64>,
    /// Checklists to read at the next poll whatever the state (the session
    /// appeared or just went idle).
    due: BTreeSet<String>,
    /// The content of each checklist found changed, until taken: what was
    /// read here need not be read again from the mount.
    read: BTreeMap<PathBuf, Vec<u8>>,
}

impl SessionTree {
    /// The tree of `dir`, if `dir` is an ollie-9p session tree (it has an
    /// `idx` file).
    pub fn detect(dir: &Path) -> Option<SessionTree> {
        std::fs::metadata(dir.join("idx"))
            .ok()
            .filter(|m| m.is_file())
            .map(|_| SessionTree {
                dir: dir.to_path_buf(),
                last: None,
                listed: BTreeMap::new(),
                plans: BTreeMap::new(),
                due: BTreeSet::new(),
                read: BTreeMap::new(),
            })
    }

    /// The content of the checklists the polls since the last call found
    /// changed.
    pub fn take_checklists(&mut self) -> BTreeMap<PathBuf, Vec<u8>> {
        std::mem::take(&mut self.read)
    }

    /// Every session the last read of `idx` listed, and its state.
    pub fn listed(&self) -> &BTreeMap<String, AgentState> {
        &self.listed
    }

    /// One poll: read `idx`, and the checklists that may have changed.
    /// `Err` when `idx` cannot be read (the mount went away): nothing is
    /// forgotten then, the next good read is compared with the last.
    pub fn poll(&mut self, session_plans: bool) -> Result<Vec<TreeChange>, String> {
        let text = read_all(&self.dir.join("idx"), IDX_CAP).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        let (mut new, mut changed) = (BTreeSet::new(), BTreeMap::new());
        if self.last.as_deref() != Some(&text[..]) {
            (new, changed) = self.apply_index(&text, &mut out);
            self.last = Some(text);
        }
        // Every listed session's state, every poll, changed or not: a turn
        // shorter than a poll leaves `idx` as it was, but the engine may
        // have been told busy by a delivery meanwhile.
        for (id, state) in &self.listed {
            out.push(TreeChange::Listed {
                session: id.clone(),
                state: state.clone(),
                new: new.contains(id),
                from: changed.remove(id),
            });
        }
        if session_plans {
            self.poll_plans(&mut out);
        }
        Ok(out)
    }

    /// A new `idx`: the sessions no longer listed; those listed for the
    /// first time, and the states it changed (returned, for the journal);
    /// checklists due to be read.
    fn apply_index(
        &mut self,
        text: &[u8],
        out: &mut Vec<TreeChange>,
    ) -> (BTreeSet<String>, BTreeMap<String, AgentState>) {
        let listed = parse_index(&String::from_utf8_lossy(text));
        for id in self.listed.keys().filter(|id| !listed.contains_key(*id)) {
            self.plans.remove(id);
            self.due.remove(id);
            out.push(TreeChange::Gone(id.clone()));
        }
        let (mut new, mut changed) = (BTreeSet::new(), BTreeMap::new());
        for (id, state) in &listed {
            match self.listed.get(id) {
                None => {
                    self.due.insert(id.clone());
                    new.insert(id.clone());
                }
                Some(before) if before != state => {
                    // The turn that just ended may have ticked.
                    if state.is_idle() {
                        self.due.insert(id.clone());
                    }
                    changed.insert(id.clone(), before.clone());
                }
                Some(_) => {}
            }
        }
        self.listed = listed;
        (new, changed)
    }

    fn poll_plans(&mut self, out: &mut Vec<TreeChange>) {
        let due = std::mem::take(&mut self.due);
        let read: Vec<String> = self
            .listed
            .iter()
            .filter(|(id, state)| !state.is_idle() || due.contains(*id))
            .map(|(id, _)| id.clone())
            .collect();
        for id in read {
            let path = self.dir.join(&id).join("plan");
            let Ok(bytes) = read_all(&path, IDX_CAP) else {
                continue;
            };
            let hash = content_hash(&bytes);
            if self.plans.insert(id, hash) != Some(hash) && !bytes.is_empty() {
                self.read.insert(path.clone(), bytes);
                out.push(TreeChange::PlanChanged(path));
            }
        }
    }
}

/// Whether session `id` is listed in `<dir>/idx` now (one read). `Err`
/// when `idx` cannot be read (not an ollie-9p tree, or the mount is gone).
/// `idx` is read, not the directory: after a kill the old entry stays
/// visible for a second (the kernel's entry cache).
pub fn listed(dir: &Path, id: &str) -> std::io::Result<bool> {
    Ok(matches!(listing(dir, id)?, Listing::Listed(_)))
}

/// What `idx` says of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing {
    /// Not listed: killed, renamed, or never was.
    Absent,
    /// Listed, in this state (`None`: a state this version cannot read).
    Listed(Option<AgentState>),
}

/// Session `id`'s line in `<dir>/idx` now (one read): whether it is
/// listed, and its state — one round trip to the server for both.
pub fn listing(dir: &Path, id: &str) -> std::io::Result<Listing> {
    let text = read_all(&dir.join("idx"), IDX_CAP)?;
    Ok(find_listing(&String::from_utf8_lossy(&text), id))
}

/// What the text of `idx` says of session `id`.
pub(super) fn find_listing(text: &str, id: &str) -> Listing {
    let line = text.lines().find_map(|l| {
        let mut cols = l.split('\t');
        (cols.next().map(str::trim) == Some(id)).then(|| cols.next())
    });
    match line {
        None => Listing::Absent,
        Some(state) => Listing::Listed(state.and_then(AgentState::parse)),
    }
}

/// `id\tstate\tcwd\tbackend\tmodel` lines; ids that are not safe path
/// components and lines without a state are skipped.
fn parse_index(text: &str) -> BTreeMap<String, AgentState> {
    text.lines()
        .filter_map(|line| {
            let mut cols = line.split('\t');
            let id = cols.next()?.trim();
            let state = AgentState::parse(cols.next()?)?;
            check_name(id).ok()?;
            Some((id.to_string(), state))
        })
        .collect()
}

fn content_hash(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Read a synthetic file to its end (its reported size means nothing).
/// Over FUSE with direct I/O every `read(2)` is one request to the
/// server, so the buffer starts large: an `idx` of 100 sessions is two
/// reads (the data, then end of file), not the dozen a small first buffer
/// growing by doubling would take.
fn read_all(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    let mut file = open_synthetic(path)?;
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut out = vec![0u8; READ_CHUNK.min(cap)];
    let mut filled = 0;
    loop {
        if filled == out.len() {
            if filled >= cap {
                break;
            }
            out.resize((filled * 2).min(cap), 0);
        }
        match file.read(&mut out[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    out.truncate(filled);
    Ok(out)
}

/// A synthetic file opened to read: never blocking on open, never a
/// terminal, never through a symlink.
pub(super) fn open_synthetic(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
}

/// The first read's size: far more than an `idx` of a few hundred
/// sessions or a session checklist.
pub(super) const READ_CHUNK: usize = 64 << 10;

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(dir: &Path, rows: &[(&str, &str)]) {
        let text: String = rows
            .iter()
            .map(|(id, st)| format!("{id}\t{st}\t/src\tb\tm\n"))
            .collect();
        std::fs::write(dir.join("idx"), text).unwrap();
    }

    fn listed(session: &str, state: &str, new: bool) -> TreeChange {
        TreeChange::Listed {
            session: session.into(),
            state: AgentState::parse(state).unwrap(),
            new,
            from: None,
        }
    }

    #[test]
    fn every_poll_tells_every_state_and_checklists_are_read_only_around_turns() {
        let t = tempfile::tempdir().unwrap();
        idx(t.path(), &[("a", "idle"), ("b", "thinking")]);
        for id in ["a", "b"] {
            std::fs::create_dir(t.path().join(id)).unwrap();
            std::fs::write(t.path().join(id).join("plan"), "# g\n- [ ] x\n").unwrap();
        }
        let mut tree = SessionTree::detect(t.path()).unwrap();
        let first = tree.poll(true).unwrap();
        assert!(first.contains(&listed("a", "idle", true)));
        assert!(first.contains(&TreeChange::PlanChanged(t.path().join("a/plan"))));
        assert!(first.contains(&TreeChange::PlanChanged(t.path().join("b/plan"))));
        // Nothing changed: every state is told again all the same (the
        // engine may have heard otherwise from a delivery); idle a's
        // checklist is not read again; busy b's is, but unchanged.
        std::fs::write(t.path().join("a/plan"), "# g\n- [x] x\n").unwrap();
        assert_eq!(
            tree.poll(true).unwrap(),
            vec![listed("a", "idle", false), listed("b", "thinking", false)]
        );
        // a goes busy, then idle: its change is seen by then.
        idx(t.path(), &[("a", "calling: grep"), ("b", "thinking")]);
        let busy = tree.poll(true).unwrap();
        assert!(busy.contains(&TreeChange::PlanChanged(t.path().join("a/plan"))));
        idx(t.path(), &[("b", "idle")]);
        let later = tree.poll(true).unwrap();
        assert!(later.contains(&TreeChange::Gone("a".into())));
        assert!(later.contains(&TreeChange::Listed {
            session: "b".into(),
            state: AgentState::Idle,
            new: false,
            from: Some(AgentState::Busy("thinking".into())),
        }));
        assert_eq!(tree.listed().len(), 1);
    }

    #[test]
    fn unsafe_ids_and_stateless_lines_are_skipped() {
        let rows = parse_index("../x\tidle\n\n ok \tidle\t/c\nnostate\n");
        assert_eq!(rows.keys().collect::<Vec<_>>(), vec!["ok"]);
    }
}

//! A test double of 9beads (lneely/9beads), built from its source and
//! served through a real FUSE mount (`util::fuse`), so the daemon reads it
//! as it reads `~/mnt/beads` over 9pfuse, and tests drive it through its own
//! files with plain `std::fs` writes, as a user's tools would.
//!
//! Where each behaviour comes from (all in 9beads' `p9/server.go` unless
//! said otherwise):
//! - the `events` file: `eventLog.append` (one `json.Marshal` of a
//!   `map[string]string` per event, so keys come out sorted, then `\n`) and
//!   `readFile` (every read returns the whole log from byte 0); `makeStat`
//!   reports its current length and no mtime; the log lives in memory, so
//!   it is empty again after a restart (`New`), and so is the mount table;
//! - events are written by `cmdNew`/`handleNewWrite` (`created`), `cmdClaim`
//!   (`claimed`, with no assignee), `cmdComplete` (`completed`), `cmdFail`
//!   (`failed`), `cmdDelete` (`deleted`), `handleBeadWrite` with front
//!   matter (`updated`), `doMount`/`doUmount` (`mount`, `umount`) — and by
//!   nothing else: `unclaim`, `open`, `reopen`, `defer`, `dep`, `undep`,
//!   `update`, `label`, `relate` change the store silently;
//! - list files: `readMountList` (`id\tstatus\tblockers\tassignee\tupdated\t
//!   title`, `-` for no dependencies and for no assignee, the dependency
//!   count of any kind, `YYYY-MM-DD`, the title verbatim) and
//!   `readAggregateList` for the root versions; `list` is every bead not
//!   closed, `ready` beads' `GetReadyWork` (open, not deferred to the
//!   future, no open `blocks` dependency, no blocked parent);
//! - bead files: `readBead` (YAML front matter `id, title, status, updated,
//!   parent, labels, blockers` between `---` lines, then the description);
//!   closed beads are still readable by id but not listed (`pathType`,
//!   `readDir`);
//! - `<mount>/ctl`: `handleMountCtl` and the `cmd*` functions, with the
//!   arguments split by `ParseArgs` and `ParseKV` (`p9/cmd.go`) — the ctl
//!   files of commit eca9140, which the per-command endpoint files
//!   (`claim`, `unclaim`, …; `handleMountEndpointWrite`, served here too)
//!   replaced in f040a6b; root `ctl`: `handleRootCtl` (`mount CWD [NAME]`,
//!   `umount NAME|CWD`); root `mount`/`umount` files: `handleWrite`;
//! - a write acts when the file is closed (`clunk` → `handleWrite`, the text
//!   trimmed, an empty one ignored) and its error never reaches the writer
//!   (9pfuse): it is kept in [`Beads::errors`] for the tests instead.
//!
//! Not modelled: `new` (front-matter creation), comments, `init`'s effect on
//! later ids beyond the prefix, priorities (rows keep creation order).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::util::fuse::{Mount, Node, Tree};

/// The per-mount write endpoints (`mountWriteEndpoints`), plus `ctl`.
const ENDPOINTS: &[&str] = &[
    "claim", "unclaim", "open", "defer", "reopen", "complete", "fail", "label", "unlabel", "dep",
    "undep", "relate", "init", "delete",
];
/// Read-only per-mount files.
const MOUNT_FILES: &[&str] = &["cwd", "list", "ready", "deferred", "closed"];
/// Root files (`pathType`, with the `ctl` of eca9140).
const ROOT_FILES: &[&str] = &[
    "ctl", "mount", "umount", "mtab", "ready", "deferred", "closed", "events",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DepKind {
    Blocks,
    ParentChild,
    Related,
}

#[derive(Clone, Debug)]
struct Bead {
    id: String,
    title: String,
    description: String,
    status: String,
    assignee: String,
    labels: Vec<String>,
    /// What this bead depends on, in the order added.
    deps: Vec<(String, DepKind)>,
    /// RFC 3339, as `defer ID until T` stores it.
    defer_until: Option<String>,
    updated: String,
}

/// One project's beads database (the dolt store under `~/.beads/<cwd>`):
/// it outlives mounts and restarts.
#[derive(Default)]
struct Store {
    beads: Vec<Bead>,
    prefix: Option<String>,
    /// Feeds the id generator (9beads hashes cwd and the clock).
    created: u64,
}

#[derive(Default)]
struct State {
    /// Mount name → cwd.
    mounts: BTreeMap<String, String>,
    /// cwd → store.
    stores: BTreeMap<String, Store>,
    events: Vec<u8>,
    /// Writes acted on (or refused) so far: what [`Beads::ctl`] waits for.
    applied: u64,
    errors: Vec<String>,
    /// Feeds `shortID` for mounts without a name.
    mounted: u64,
    /// Read requests per path, to see who polls what.
    reads: BTreeMap<String, u64>,
}

/// The 9beads server; serve it with [`Beads::mount`].
#[derive(Default)]
pub struct Beads {
    state: Mutex<State>,
}

/// A served 9beads: the double and its FUSE mount (unmounted on drop).
pub struct Served {
    pub beads: Arc<Beads>,
    pub mount: Mount,
}

impl Beads {
    /// A fresh server on a fresh FUSE mount.
    pub fn mount() -> Result<Served, String> {
        let beads = Arc::new(Beads::default());
        let mount = Mount::new(beads.clone())?;
        Ok(Served { beads, mount })
    }

    /// 9beads stopped and started again (`runServer` → `New`): the event
    /// log and the mount table are empty, the stores on disk are kept.
    pub fn restart(&self) {
        let mut s = self.state.lock().unwrap();
        s.events.clear();
        s.mounts.clear();
    }

    /// Writes handled so far (each one at its file's close).
    pub fn applied(&self) -> u64 {
        self.state.lock().unwrap().applied
    }

    /// Errors the writers never saw, as 9beads prints them on stderr.
    pub fn errors(&self) -> Vec<String> {
        self.state.lock().unwrap().errors.clone()
    }

    /// How many read requests `path` got (each `read(2)` is one: direct I/O).
    pub fn reads(&self, path: &str) -> u64 {
        self.state
            .lock()
            .unwrap()
            .reads
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    /// The event log as served.
    pub fn events(&self) -> String {
        String::from_utf8_lossy(&self.state.lock().unwrap().events).into_owned()
    }
}

impl Beads {
    /// What `readFile` returns for `path` now.
    fn content(&self, path: &str) -> Result<Vec<u8>, i32> {
        let s = self.state.lock().unwrap();
        let parts: Vec<&str> = path.split('/').collect();
        let text = match parts[..] {
            ["events"] => return Ok(s.events.clone()),
            ["mtab"] => s
                .mounts
                .iter()
                .map(|(n, c)| format!("{n}\t{c}\n"))
                .collect(),
            [kind @ ("ready" | "deferred" | "closed")] => s
                .mounts
                .values()
                .filter_map(|cwd| s.stores.get(cwd))
                .map(|store| store.rows(kind))
                .collect(),
            [m, f] => {
                let cwd = s.mounts.get(m).ok_or(libc::ENOENT)?;
                let empty = Store::default();
                let store = s.stores.get(cwd).unwrap_or(&empty);
                match f {
                    "cwd" => format!("{cwd}\n"),
                    "list" | "ready" | "deferred" | "closed" => store.rows(f),
                    // Write-only files read as empty (`readFile` → nil).
                    _ if f == "ctl" || ENDPOINTS.contains(&f) => String::new(),
                    id => store.bead_file(id).unwrap_or_default(),
                }
            }
            _ => String::new(),
        };
        Ok(text.into_bytes())
    }
}

impl Served {
    /// Point `project`'s tracker at this mount: its `events`, its root,
    /// the one 9beads mount `mount`, polled every 50 ms.
    pub fn track(&self, project: &mut crate::util::daemon::Project, mount: &str) {
        let root = self.root().display().to_string();
        let events = format!("{root}/events");
        project.set("events", "path", &format!("{events:?}"));
        project.set("events", "beads_root", &format!("{root:?}"));
        project.set("events", "mounts", &format!("[{mount:?}]"));
        project.set("events", "poll_interval_ms", "50");
    }

    /// The mount point (`~/mnt/beads`).
    pub fn root(&self) -> &std::path::Path {
        self.mount.path()
    }

    /// Write `text` to `file` under the mount with one open-write-close, as
    /// `echo text > file` does, and wait until 9beads acted on it (the
    /// clunk arrives after `close(2)` returns).
    pub fn write(&self, file: &str, text: &str) {
        let before = self.beads.applied();
        std::fs::write(self.root().join(file), format!("{text}\n"))
            .unwrap_or_else(|e| panic!("write {file}: {e}"));
        crate::util::wait_until(
            &format!("9beads acting on {file}: {text}"),
            std::time::Duration::from_secs(5),
            || (self.beads.applied() > before).then_some(()),
        );
    }

    /// `echo "CMD" > <mount>/ctl`; panics if 9beads refused it.
    pub fn ctl(&self, mount: &str, cmd: &str) {
        let errors = self.beads.errors().len();
        self.write(&format!("{mount}/ctl"), cmd);
        let now = self.beads.errors();
        assert_eq!(now.len(), errors, "9beads refused {cmd:?}: {now:?}");
    }

    /// The id of the bead titled `title`, from `<mount>/list` as a user
    /// finds it (9beads tells the creator nothing).
    pub fn id_of(&self, mount: &str, title: &str) -> String {
        let list = std::fs::read_to_string(self.root().join(mount).join("list")).unwrap();
        list.lines()
            .find(|l| l.split('\t').nth(5) == Some(title))
            .and_then(|l| l.split('\t').next())
            .unwrap_or_else(|| panic!("no bead {title:?} in {mount}/list:\n{list}"))
            .to_string()
    }
}

/// Today as 9beads formats `UpdatedAt` (`2006-01-02`), in UTC.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Days to civil date (Howard Hinnant's algorithm).
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `ParseArgs` (p9/cmd.go): spaces and tabs split; single quotes literal;
/// double quotes with backslash escapes; a bare backslash escapes.
fn parse_args(input: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = input.chars().peekable();
    // `parseEscape`: \n, \t, \uXXXX (else U+FFFD, the 4 digits kept),
    // any other character as itself.
    let escape = |chars: &mut std::iter::Peekable<std::str::Chars>| match chars.next() {
        Some('n') => '\n',
        Some('t') => '\t',
        Some('u') => {
            let hex: String = chars.clone().take(4).collect();
            match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                Some(c) if hex.len() == 4 => {
                    chars.nth(3);
                    c
                }
                _ => '\u{fffd}',
            }
        }
        Some(c) => c,
        None => '\\',
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if !cur.is_empty() || quoted {
                    args.push(std::mem::take(&mut cur));
                    quoted = false;
                }
            }
            '\'' => {
                quoted = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => cur.push(escape(&mut chars)),
                        Some(c) => cur.push(c),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            '\\' => {
                if chars.peek().is_none() {
                    return Err("trailing backslash".into());
                }
                cur.push(escape(&mut chars));
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() || quoted {
        args.push(cur);
    }
    Ok(args)
}

/// `ParseKV` (p9/cmd.go): `k=v` arguments apart from the positional ones.
fn parse_kv(args: &[String]) -> (Vec<String>, BTreeMap<String, String>) {
    let mut pos = Vec::new();
    let mut kv = BTreeMap::new();
    for a in args {
        match a.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                kv.insert(k.to_string(), v.to_string());
            }
            _ => pos.push(a.clone()),
        }
    }
    (pos, kv)
}

/// `json.Marshal(map[string]string{…})`: keys sorted, HTML characters
/// escaped as Go does.
fn event(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut sorted = fields.to_vec();
    sorted.sort();
    let map: serde_json::Map<String, serde_json::Value> = sorted
        .into_iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
        .collect();
    let text = serde_json::to_string(&map)
        .unwrap()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    let mut line = text.into_bytes();
    line.push(b'\n');
    line
}

impl State {
    fn store(&mut self, mount: &str) -> Result<(&mut Store, String), String> {
        let cwd = self
            .mounts
            .get(mount)
            .cloned()
            .ok_or_else(|| format!("mount not found: {mount}"))?;
        Ok((self.stores.entry(cwd).or_default(), mount.to_string()))
    }

    fn append(&mut self, fields: &[(&str, &str)]) {
        let line = event(fields);
        self.events.extend_from_slice(&line);
    }

    /// `doMount`: the directory must exist; a name or cwd mounted twice is
    /// refused; no name means a random `shortID`.
    fn mount(&mut self, cwd: &str, name: Option<&str>) -> Result<(), String> {
        if std::fs::metadata(cwd).is_err() {
            return Err(format!("directory does not exist: {cwd}"));
        }
        self.mounted += 1;
        let name = name.map_or_else(
            || format!("{:08x}", self.mounted * 0x9e37_79b9),
            str::to_string,
        );
        if self.mounts.contains_key(&name) {
            return Err(format!("mount {name:?} already exists"));
        }
        if let Some((m, _)) = self.mounts.iter().find(|(_, c)| *c == cwd) {
            return Err(format!("path already mounted as {m}"));
        }
        self.mounts.insert(name.clone(), cwd.to_string());
        self.append(&[("type", "mount"), ("name", &name), ("cwd", cwd)]);
        Ok(())
    }

    /// `doUmount`: by name, else by cwd.
    fn umount(&mut self, name_or_cwd: &str) -> Result<(), String> {
        let name = if self.mounts.contains_key(name_or_cwd) {
            name_or_cwd.to_string()
        } else {
            self.mounts
                .iter()
                .find(|(_, c)| *c == name_or_cwd)
                .map(|(n, _)| n.clone())
                .ok_or_else(|| format!("umount: {name_or_cwd:?} not found"))?
        };
        self.mounts.remove(&name);
        self.append(&[("type", "umount"), ("name", &name)]);
        Ok(())
    }

    /// `handleMountCtl` and the `cmd*` functions, by name.
    fn command(&mut self, mount: &str, cmd: &str, args: &[String]) -> Result<(), String> {
        let need = |n: usize, usage: &str| {
            if args.len() < n {
                Err(format!("{cmd} requires {usage}"))
            } else {
                Ok(())
            }
        };
        let (store, mount) = self.store(mount)?;
        let today = today();
        let mut emit: Option<(&str, String)> = None;
        match cmd {
            "new" => {
                need(1, "title")?;
                let (pos, kv) = parse_kv(args.get(2..).unwrap_or(&[]));
                let parent = pos.first().cloned();
                let id = store.next_id(parent.as_deref());
                let mut deps = Vec::new();
                if let Some(p) = parent {
                    deps.push((p, DepKind::ParentChild));
                }
                for b in kv.get("blockers").into_iter().flat_map(|b| b.split(',')) {
                    if !b.trim().is_empty() {
                        deps.push((b.trim().to_string(), DepKind::Blocks));
                    }
                }
                let mut labels = Vec::new();
                if let Some(c) = kv.get("capability") {
                    labels.push(format!("capability:{c}"));
                }
                store.beads.push(Bead {
                    id: id.clone(),
                    title: args[0].clone(),
                    description: args.get(1).cloned().unwrap_or_default(),
                    status: "open".into(),
                    assignee: String::new(),
                    labels,
                    deps,
                    defer_until: None,
                    updated: today,
                });
                emit = Some(("created", id));
            }
            "claim" => {
                need(1, "<id>")?;
                let assignee = args.get(1).cloned().unwrap_or_else(|| "9beads".into());
                let b = store.bead(&args[0])?;
                b.status = "in_progress".into();
                b.assignee = assignee;
                b.updated = today;
                emit = Some(("claimed", args[0].clone()));
            }
            "unclaim" => {
                need(1, "<id>")?;
                let b = store.bead(&args[0])?;
                b.status = "open".into();
                b.assignee.clear();
                b.updated = today;
            }
            "open" | "reopen" => {
                need(1, "<id>")?;
                let b = store.bead(&args[0])?;
                b.status = "open".into();
                b.updated = today;
            }
            "defer" => {
                need(1, "<id>")?;
                let b = store.bead(&args[0])?;
                b.status = "deferred".into();
                if args.len() >= 3 && args[1] == "until" {
                    b.defer_until = Some(args[2].clone());
                }
                b.updated = today;
            }
            "complete" | "fail" => {
                need(1, "<id>")?;
                let b = store.bead(&args[0])?;
                b.status = "closed".into();
                b.updated = today;
                let kind = if cmd == "complete" {
                    "completed"
                } else {
                    "failed"
                };
                emit = Some((kind, args[0].clone()));
            }
            "update" => {
                need(3, "<id> <field> <value>")?;
                if args[1] == "status" || args[1] == "assignee" {
                    return Err(format!(
                        "update cannot change {} (use claim/complete/defer)",
                        args[1]
                    ));
                }
                let b = store.bead(&args[0])?;
                match args[1].as_str() {
                    "title" => b.title = args[2].clone(),
                    "description" => b.description = args[2].clone(),
                    _ => {}
                }
                b.updated = today;
            }
            "delete" => {
                need(1, "<id>")?;
                store.bead(&args[0])?;
                store.beads.retain(|b| b.id != args[0]);
                emit = Some(("deleted", args[0].clone()));
            }
            "label" | "unlabel" => {
                need(2, "<id> <label>")?;
                let b = store.bead(&args[0])?;
                b.labels.retain(|l| *l != args[1]);
                if cmd == "label" {
                    b.labels.push(args[1].clone());
                }
            }
            "dep" | "relate" => {
                need(2, "<child-id> <parent-id>")?;
                let kind = if cmd == "dep" {
                    DepKind::Blocks
                } else {
                    DepKind::Related
                };
                let b = store.bead(&args[0])?;
                b.deps.push((args[1].clone(), kind));
            }
            "undep" => {
                need(2, "<child-id> <parent-id>")?;
                let b = store.bead(&args[0])?;
                b.deps.retain(|(on, _)| *on != args[1]);
            }
            "init" => store.prefix = Some(args.first().cloned().unwrap_or_else(|| "bd".into())),
            other => return Err(format!("unknown command {other:?}")),
        }
        if let Some((kind, id)) = emit {
            self.append(&[("type", kind), ("id", &id), ("mount", &mount)]);
        }
        Ok(())
    }

    /// `handleMountEndpointWrite`: `<mount>/claim` and friends, the id
    /// first, options as `key=value`.
    fn endpoint(&mut self, mount: &str, endpoint: &str, input: &str) -> Result<(), String> {
        let args = parse_args(input).map_err(|e| format!("{endpoint}: {e}"))?;
        if endpoint == "init" {
            return self.command(mount, "init", &args);
        }
        let Some((id, rest)) = args.split_first() else {
            return Err(format!("{endpoint}: bead ID required"));
        };
        let (_, kv) = parse_kv(rest);
        let mut cmd_args = vec![id.clone()];
        match endpoint {
            "claim" => cmd_args.extend(kv.get("assignee").cloned()),
            "defer" => {
                if let Some(t) = kv.get("until") {
                    cmd_args.extend(["until".to_string(), t.clone()]);
                }
            }
            "fail" => cmd_args.extend(kv.get("reason").cloned().or(rest.first().cloned())),
            "label" | "unlabel" | "dep" | "undep" | "relate" => {
                let Some(second) = rest.first() else {
                    return Err(format!("{endpoint}: second argument required"));
                };
                cmd_args.push(second.clone());
            }
            _ => {}
        }
        self.command(mount, endpoint, &cmd_args)
    }

    /// `handleBeadWrite`: with front matter, title/status/blockers are
    /// updated and `updated` is emitted; without, only the description,
    /// silently.
    fn bead_write(&mut self, mount: &str, id: &str, text: &str) -> Result<(), String> {
        let (store, mount) = self.store(mount)?;
        let today = today();
        let b = store.bead(id)?;
        let Some(rest) = text.strip_prefix("---\n") else {
            b.description = text.trim().to_string();
            b.updated = today;
            return Ok(());
        };
        let (front, body) = rest
            .split_once("\n---\n")
            .or_else(|| rest.trim_end().strip_suffix("---").map(|f| (f, "")))
            .ok_or("invalid frontmatter: missing closing ---")?;
        for line in front.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key.trim() {
                "title" => b.title = value.to_string(),
                "status" if !value.is_empty() => b.status = value.to_string(),
                "blockers" => {
                    let want: Vec<String> = value
                        .trim_matches(|c| c == '[' || c == ']')
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect();
                    b.deps
                        .retain(|(on, k)| *k != DepKind::Blocks || want.contains(on));
                    for w in want {
                        if !b.deps.iter().any(|(on, _)| *on == w) {
                            b.deps.push((w, DepKind::Blocks));
                        }
                    }
                }
                _ => {}
            }
        }
        b.description = body.trim_end_matches('\n').to_string();
        b.updated = today;
        self.append(&[("type", "updated"), ("id", id), ("mount", &mount)]);
        Ok(())
    }

    /// `handleWrite`: the text trimmed, an empty one ignored.
    fn write(&mut self, path: &str, text: &str) -> Result<(), String> {
        let input = text.trim();
        if input.is_empty() {
            return Ok(());
        }
        let parts: Vec<&str> = path.splitn(2, '/').collect();
        match parts[..] {
            ["ctl"] => {
                let args = parse_args(input).map_err(|e| format!("parse error: {e}"))?;
                match args.first().map(String::as_str) {
                    Some("mount") if args.len() >= 2 => {
                        self.mount(&args[1], args.get(2).map(String::as_str))
                    }
                    Some("umount") if args.len() >= 2 => self.umount(&args[1]),
                    Some(other) => Err(format!("unknown global command: {other}")),
                    None => Err("empty command".into()),
                }
            }
            ["mount"] => self.mount(input, None),
            ["umount"] => self.umount(input),
            [mount, "ctl"] => {
                let args = parse_args(input).map_err(|e| format!("parse error: {e}"))?;
                let (cmd, rest) = args.split_first().ok_or("empty command")?;
                self.command(mount, cmd, rest)
            }
            [mount, file] if ENDPOINTS.contains(&file) => self.endpoint(mount, file, input),
            [mount, id] => self.bead_write(mount, id, text),
            _ => Err(format!("invalid path: /{path}")),
        }
    }
}

impl Store {
    fn bead(&mut self, id: &str) -> Result<&mut Bead, String> {
        self.beads
            .iter_mut()
            .find(|b| b.id == id)
            .ok_or_else(|| format!("issue {id} not found"))
    }

    /// `generateID`: `<prefix>-<4 base36>`, or `<parent>.<n>` for a child.
    fn next_id(&mut self, parent: Option<&str>) -> String {
        self.created += 1;
        if let Some(p) = parent {
            let n = self
                .beads
                .iter()
                .filter(|b| b.id.starts_with(&format!("{p}.")))
                .count();
            return format!("{p}.{}", n + 1);
        }
        let prefix = self.prefix.clone().unwrap_or_else(|| "bd".into());
        let alphabet = b"0123456789abcdefghijklmnopqrstuvwxyz";
        let mut num = (self.created * 1_000_003 + 0x5bd1) % 36u64.pow(4);
        let mut id = [b'0'; 4];
        for slot in id.iter_mut().rev() {
            *slot = alphabet[(num % 36) as usize];
            num /= 36;
        }
        format!("{prefix}-{}", String::from_utf8_lossy(&id))
    }

    fn get(&self, id: &str) -> Option<&Bead> {
        self.beads.iter().find(|b| b.id == id)
    }

    fn closed(&self, id: &str) -> bool {
        self.get(id).is_none_or(|b| b.status == "closed")
    }

    /// `GetReadyWork` as `bd ready` decides it, for the statuses and
    /// dependency kinds 9beads can make.
    fn is_ready(&self, bead: &Bead, depth: usize) -> bool {
        let deferred = bead
            .defer_until
            .as_deref()
            .is_some_and(|t| t > chrono_now().as_str());
        bead.status == "open" && !deferred && !self.blocked(bead, depth)
    }

    fn blocked(&self, bead: &Bead, depth: usize) -> bool {
        depth > 32
            || bead.deps.iter().any(|(on, kind)| match kind {
                DepKind::Blocks => self.get(on).is_some() && !self.closed(on),
                DepKind::ParentChild => self.get(on).is_some_and(|p| self.blocked(p, depth + 1)),
                DepKind::Related => false,
            })
    }

    /// `readMountList` for one kind of list.
    fn rows(&self, kind: &str) -> String {
        let mut out = String::new();
        for b in &self.beads {
            let keep = match kind {
                "list" => b.status != "closed",
                "ready" => self.is_ready(b, 0),
                "deferred" => b.status == "deferred",
                "closed" => b.status == "closed",
                _ => false,
            };
            if !keep {
                continue;
            }
            let blockers = if b.deps.is_empty() {
                "-".to_string()
            } else {
                b.deps.len().to_string()
            };
            let assignee = if b.assignee.is_empty() {
                "-"
            } else {
                &b.assignee
            };
            out.push_str(&format!(
                "{}\t{}\t{blockers}\t{assignee}\t{}\t{}\n",
                b.id, b.status, b.updated, b.title
            ));
        }
        out
    }

    /// `readBead`: yaml.v3's rendering of `beadFrontmatter` (flow lists).
    fn bead_file(&self, id: &str) -> Option<String> {
        let b = self.get(id)?;
        let parent = b
            .deps
            .iter()
            .find(|(_, k)| *k == DepKind::ParentChild)
            .map_or("", |(on, _)| on.as_str());
        let blockers: Vec<&str> = b
            .deps
            .iter()
            .filter(|(_, k)| *k == DepKind::Blocks)
            .map(|(on, _)| on.as_str())
            .collect();
        let mut text = format!(
            "---\nid: {}\ntitle: {}\nstatus: {}\nupdated: \"{}\"\nparent: \"{parent}\"\nlabels: [{}]\nblockers: [{}]\n---\n",
            b.id,
            b.title,
            b.status,
            b.updated,
            b.labels.join(", "),
            blockers.join(", ")
        );
        if !b.description.is_empty() {
            text.push_str(&b.description);
            if !b.description.ends_with('\n') {
                text.push('\n');
            }
        }
        Some(text)
    }
}

/// Now in RFC 3339 UTC, comparable as a string with `defer until` stamps
/// written in UTC (`2099-01-01T00:00:00Z`).
fn chrono_now() -> String {
    format!("{}T23:59:59Z", today())
}

impl Tree for Beads {
    fn node(&self, path: &str) -> Option<Node> {
        let s = self.state.lock().unwrap();
        let parts: Vec<&str> = path.split('/').collect();
        match parts[..] {
            [""] => Some(Node::Dir),
            [f] if ROOT_FILES.contains(&f) => Some(Node::File),
            [m] if s.mounts.contains_key(m) => Some(Node::Dir),
            [m, f] if s.mounts.contains_key(m) => {
                if f == "ctl" || MOUNT_FILES.contains(&f) || ENDPOINTS.contains(&f) {
                    return Some(Node::File);
                }
                let cwd = &s.mounts[m];
                s.stores.get(cwd)?.get(f).map(|_| Node::File)
            }
            _ => None,
        }
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let s = self.state.lock().unwrap();
        let mut names: Vec<String>;
        if dir.is_empty() {
            names = ROOT_FILES.iter().map(|f| f.to_string()).collect();
            names.extend(s.mounts.keys().cloned());
        } else if let Some(cwd) = s.mounts.get(dir) {
            names = ["ctl"]
                .iter()
                .chain(MOUNT_FILES)
                .chain(ENDPOINTS)
                .map(|f| f.to_string())
                .collect();
            if let Some(store) = s.stores.get(cwd) {
                names.extend(
                    store
                        .beads
                        .iter()
                        .filter(|b| b.status != "closed")
                        .map(|b| b.id.clone()),
                );
            }
        } else {
            names = Vec::new();
        }
        names
    }

    /// `readFile`, counted per path.
    fn read(&self, path: &str) -> Result<Vec<u8>, i32> {
        *self
            .state
            .lock()
            .unwrap()
            .reads
            .entry(path.to_string())
            .or_default() += 1;
        self.content(path)
    }

    fn write(&self, path: &str, text: &[u8]) -> Result<(), i32> {
        let mut s = self.state.lock().unwrap();
        let text = String::from_utf8_lossy(text).into_owned();
        // Counted only when there is something to act on: the truncate of
        // an `O_TRUNC` open arrives as a clunk with nothing written first.
        if !text.trim().is_empty() {
            s.applied += 1;
        }
        match s.write(path, &text) {
            Ok(()) => Ok(()),
            Err(e) => {
                s.errors.push(format!("/{path}: {e}"));
                Err(libc::EIO)
            }
        }
    }

    fn remove(&self, _path: &str) -> Result<(), i32> {
        // `Tremove` → "remove not supported".
        Err(libc::EPERM)
    }

    /// `makeStat`: the length of the current content, 0 for write-only files.
    fn size(&self, path: &str) -> u64 {
        if self.mode(path, Node::File) == 0o222 {
            return 0;
        }
        self.content(path).map_or(0, |b| b.len() as u64)
    }

    /// `makeStat`'s modes.
    fn mode(&self, path: &str, node: Node) -> u16 {
        let base = path.rsplit('/').next().unwrap_or(path);
        match node {
            Node::Dir => 0o555,
            Node::File if base == "ctl" || base == "mount" || base == "umount" => 0o222,
            Node::File if path.contains('/') && ENDPOINTS.contains(&base) => 0o222,
            Node::File
                if [
                    "mtab", "cwd", "list", "ready", "deferred", "closed", "events",
                ]
                .contains(&base) =>
            {
                0o444
            }
            Node::File => 0o666,
        }
    }
}

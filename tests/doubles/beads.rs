//! A test double of 9beads (lneely/9beads @d82b475, the HEAD of
//! 2026-04-11), built from its source and served through a real FUSE mount
//! (`doubles::fuse`), so the daemon reads it as it reads `~/mnt/beads` over
//! 9pfuse, and tests drive it through its own files with plain `std::fs`
//! writes, as a user's tools (and 9beads-mcp) do.
//!
//! Where each behaviour comes from (all in 9beads' `p9/server.go` unless
//! said otherwise):
//! - mounts: `doMount` — the directory must exist; with
//!   `BEADS_PROJECT_DIRS` entries (`config/config.go`) it must be at most
//!   one level below one, a path two levels below resolves to the one
//!   level below and deeper ones are refused; the name is `shortID()`, four
//!   random bytes in hex, so a test cannot know it in advance; a name or a
//!   directory mounted twice is refused. `doUmount` takes a name or a cwd.
//!   `readMtab`: one `name\tcwd` line per mount, in map order (random
//!   here too). There is **no `ctl`** (removed in f040a6b);
//! - the `events` file: `eventLog.append` (one `json.Marshal` of a
//!   `map[string]string` per event, so keys come out sorted, then `\n`) and
//!   `readFile` (every read returns the whole log from byte 0); `makeStat`
//!   reports its current length and no mtime. The log and the mount table
//!   live in memory: a restart (`runServer` → `New`) empties both, and
//!   while the server is down its FUSE mount is gone (`fusermount -u`), so
//!   nothing under the root exists. The stores (`~/.beads/<cwd>`) survive;
//! - events are written by `handleNewWrite` (`created`), `cmdClaim`
//!   (`claimed`, with no assignee), `cmdComplete` (`completed`), `cmdFail`
//!   (`failed`), `cmdDelete` (`deleted`), `handleBeadWrite` with front
//!   matter (`updated`), `doMount` (`mount`: `cwd`, `name`) and `doUmount`
//!   (`umount`: `name`) — and by nothing else: `unclaim`, `open`, `reopen`,
//!   `defer`, `dep`, `undep`, `label`, `unlabel`, `relate`, `init` and a
//!   bead-file write without front matter change the store silently;
//! - the write-only files (`mountWriteEndpoints`, mode 0222):
//!   `handleMountEndpointWrite` with `ParseArgs`/`ParseKV` (`p9/cmd.go`):
//!   the id first; `claim <id> [assignee=<name>]` (a bare second word is
//!   ignored, the default assignee is `9beads`, a second claim
//!   overwrites), `fail <id> [reason=…|reason]`, `defer <id>
//!   [until=<RFC3339>]`, `label`/`unlabel <id> <key:value>`,
//!   `dep`/`undep`/`relate <child> <parent>`, `init [prefix]`; `new` takes
//!   YAML front matter with a `title` (`handleNewWrite`), and the new id is
//!   reported nowhere (find it in `list`);
//! - a write acts when the file is closed (`clunk` → `handleWrite`, the text
//!   trimmed, an empty one ignored) and its error never reaches the writer
//!   (9pfuse answers the release with 0): it is kept in [`Beads::errors`]
//!   for the tests instead;
//! - list files: `readMountList` (`id\tstatus\tblockers\tassignee\tupdated\t
//!   title`, `-` for no dependencies and for no assignee, the dependency
//!   count of any kind, `YYYY-MM-DD`, the title verbatim) and
//!   `readAggregateList` for the root versions (no root `list`); `list` is
//!   every bead not closed, `ready` is `GetReadyWork(WorkFilter{})`: open
//!   **or `in_progress`** (claimed beads are listed), not deferred to the
//!   future, no open `blocks` dependency, no blocked parent;
//! - bead files: `readBead` (YAML front matter `id, title, status, updated,
//!   parent, labels, blockers` between `---` lines, then the description);
//!   closed beads are still readable by id but not listed (`pathType`,
//!   `readDir`); `handleBeadWrite` with front matter sets the title (empty
//!   when absent), the description, the status when given, and the labels
//!   and `blocks` dependencies when given.
//!
//! Not modelled: comments, priorities (rows keep creation order), the dolt
//! server's own life.

use std::collections::hash_map::RandomState;
use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::doubles::fuse::{Mount, Node, Tree};

/// `mountWriteEndpoints`: write-only files in each mount directory.
const ENDPOINTS: &[&str] = &[
    "claim", "unclaim", "open", "defer", "reopen", "complete", "fail", "label", "unlabel", "dep",
    "undep", "relate", "init", "delete",
];
/// Readable per-mount files (`pathType`); `new` is read-write.
const MOUNT_FILES: &[&str] = &["cwd", "list", "ready", "deferred", "closed", "new"];
/// Root files (`pathType`).
const ROOT_FILES: &[&str] = &[
    "mount", "umount", "mtab", "ready", "deferred", "closed", "events",
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
    /// RFC 3339, as `defer <id> until=T` stores it.
    defer_until: Option<String>,
    updated: String,
}

/// One project's beads database (the dolt store under `~/.beads/<cwd>`,
/// `cwdToBeadsDir`): it outlives mounts and restarts.
#[derive(Default)]
struct Store {
    beads: Vec<Bead>,
    prefix: Option<String>,
    /// Feeds the id generator (9beads hashes cwd and the clock).
    created: u64,
}

#[derive(Default)]
struct State {
    /// The server is stopped: its FUSE mount is gone.
    down: bool,
    /// Mount name → cwd.
    mounts: BTreeMap<String, String>,
    /// cwd → store.
    stores: BTreeMap<String, Store>,
    events: Vec<u8>,
    /// `config.ProjectDirs`; empty = no check (`BEADS_PROJECT_DIRS=":"`).
    project_dirs: Vec<String>,
    /// Writes acted on (or refused) so far: what [`Served::write`] waits for.
    applied: u64,
    errors: Vec<String>,
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
    /// A fresh server on a fresh FUSE mount, with no project directories
    /// configured (any existing directory can be mounted).
    pub fn mount() -> Result<Served, String> {
        Beads::mount_with_project_dirs(&[])
    }

    /// A fresh server whose `BEADS_PROJECT_DIRS` are `dirs`.
    pub fn mount_with_project_dirs(dirs: &[&Path]) -> Result<Served, String> {
        let beads = Arc::new(Beads::default());
        beads.state.lock().unwrap().project_dirs =
            dirs.iter().map(|d| d.display().to_string()).collect();
        let mount = Mount::new(beads.clone())?;
        Ok(Served { beads, mount })
    }

    /// 9beads stops (`fgstart` gets SIGTERM, `fusermount -u` the mount):
    /// nothing under the root exists, and the event log and the mount
    /// table, kept in memory, are lost. The stores on disk are kept.
    pub fn stop(&self) {
        let mut s = self.state.lock().unwrap();
        s.down = true;
        s.events.clear();
        s.mounts.clear();
    }

    /// 9beads starts again (`New`): an empty log, no mounts.
    pub fn start(&self) {
        self.state.lock().unwrap().down = false;
    }

    /// Stopped and started again at once.
    pub fn restart(&self) {
        self.stop();
        self.start();
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
        let s = self.state.lock().unwrap();
        s.reads.get(path).copied().unwrap_or(0)
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
        if s.down {
            return Err(libc::ENOENT);
        }
        let parts: Vec<&str> = path.split('/').collect();
        let text = match parts[..] {
            ["events"] => return Ok(s.events.clone()),
            ["mtab"] => s.mtab(),
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
                    "new" => NEW_TEMPLATE.to_string(),
                    // Write-only files read as empty (`readBead` → nil).
                    _ if ENDPOINTS.contains(&f) => String::new(),
                    id => store.bead_file(id).unwrap_or_default(),
                }
            }
            _ => String::new(),
        };
        Ok(text.into_bytes())
    }
}

/// `readNewTemplate`: yaml.v3's rendering of the template struct.
const NEW_TEMPLATE: &str =
    "---\ntitle: \"\"\nstatus: open\nparent: \"\"\nlabels: []\nblockers: []\n---\n";

impl Served {
    /// Point `project`'s tracker at this 9beads with no mount named: the
    /// daemon finds the project's mount by its directory (`project.dir`,
    /// by default the parent of the plan directory: `project.root`).
    pub fn track(&self, project: &mut crate::util::project::Project) {
        let root = self.root().display().to_string();
        let events = format!("{root}/events");
        project.set("events", "path", &format!("{events:?}"));
        project.set("events", "beads_root", &format!("{root:?}"));
        project.set("events", "poll_interval_ms", "50");
    }

    /// The same with the one mount `mount` named in `[events] mounts`.
    pub fn track_named(&self, project: &mut crate::util::project::Project, mount: &str) {
        self.track(project);
        project.set("events", "mounts", &format!("[{mount:?}]"));
    }

    /// The mount point (`~/mnt/beads`).
    pub fn root(&self) -> &Path {
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
            Duration::from_secs(5),
            || (self.beads.applied() > before).then_some(()),
        );
    }

    /// [`Served::write`], and panic if 9beads refused it (its error is
    /// printed only on its stderr).
    fn accepted(&self, file: &str, text: &str) {
        let errors = self.beads.errors().len();
        self.write(file, text);
        let now = self.beads.errors();
        assert_eq!(
            now.len(),
            errors,
            "9beads refused {text:?} to {file}: {now:?}"
        );
    }

    /// `echo CWD > mount`; the name 9beads gave it, as a user finds it:
    /// in `mtab`.
    pub fn mount_dir(&self, cwd: &Path) -> String {
        self.accepted("mount", &cwd.display().to_string());
        self.name_of(cwd)
            .unwrap_or_else(|| panic!("{} not in mtab after its mount", cwd.display()))
    }

    /// The name `cwd` is mounted under now, from `mtab`.
    pub fn name_of(&self, cwd: &Path) -> Option<String> {
        let mtab = std::fs::read_to_string(self.root().join("mtab")).ok()?;
        let cwd = cwd.display().to_string();
        mtab.lines()
            .filter_map(|l| l.split_once('\t'))
            .find(|(_, c)| *c == cwd)
            .map(|(n, _)| n.to_string())
    }

    /// `echo ARGS > <mount>/<endpoint>`; panics if 9beads refused it.
    pub fn cmd(&self, mount: &str, endpoint: &str, args: &str) {
        self.accepted(&format!("{mount}/{endpoint}"), args);
    }

    /// File a bead through `<mount>/new` (YAML front matter; `front` adds
    /// lines such as `blockers: [bd-1]`); its id as a user finds it, in
    /// `list`.
    pub fn new_bead(&self, mount: &str, title: &str, front: &str) -> String {
        let quoted = serde_json::to_string(title).unwrap();
        let mut text = format!("---\ntitle: {quoted}\n");
        if !front.is_empty() {
            text.push_str(front.trim_end());
            text.push('\n');
        }
        text.push_str("---\n");
        self.accepted(&format!("{mount}/new"), &text);
        self.id_of(mount, title)
    }

    /// The id of the bead titled `title`, from `<mount>/list` (9beads tells
    /// the creator nothing).
    pub fn id_of(&self, mount: &str, title: &str) -> String {
        let list = std::fs::read_to_string(self.root().join(mount).join("list")).unwrap();
        list.lines()
            .find(|l| l.split_once('\t').is_some() && l.splitn(6, '\t').nth(5) == Some(title))
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
    let (year, month, day) = crate::util::civil::date(secs);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `shortID`: four random bytes, in hex.
fn short_id() -> String {
    format!(
        "{:08x}",
        RandomState::new().hash_one(std::time::Instant::now()) as u32
    )
}

/// `ParseArgs` (p9/cmd.go): spaces and tabs split; single quotes literal;
/// double quotes with backslash escapes; a bare backslash escapes.
fn parse_args(input: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = input.chars().peekable();
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

/// `parseEscape` (p9/cmd.go): \n, \t, \uXXXX (else U+FFFD, the 4 digits
/// kept), any other character as itself.
fn escape(chars: &mut std::iter::Peekable<std::str::Chars>) -> char {
    match chars.next() {
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
    }
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

/// The front matter 9beads reads into `beadFrontmatter` (yaml.v3): the
/// keys present, scalars unquoted, flow lists split. A list key that is
/// absent is `None` (Go's nil slice: "leave as it is").
#[derive(Default)]
struct Front {
    title: String,
    status: String,
    parent: String,
    labels: Option<Vec<String>>,
    blockers: Option<Vec<String>>,
}

/// Split `---\n<front>\n---\n<body>` as `handleNewWrite`/`handleBeadWrite`
/// do: `None` when it does not begin with front matter.
fn split_front(content: &str) -> Option<Result<(&str, &str), String>> {
    let rest = content.strip_prefix("---\n")?;
    if let Some(end) = rest.find("\n---\n") {
        return Some(Ok((&rest[..end], &rest[end + 5..])));
    }
    if rest.trim_end_matches('\n').ends_with("---") {
        let end = rest.rfind("---").unwrap_or(0);
        return Some(Ok((&rest[..end], "")));
    }
    Some(Err("invalid frontmatter: missing closing ---".into()))
}

fn parse_front(text: &str) -> Result<Front, String> {
    let mut f = Front::default();
    for line in text.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("yaml: line without a key: {line:?}"));
        };
        let value = value.trim();
        match key.trim() {
            "title" => f.title = yaml_scalar(value)?,
            "status" => f.status = yaml_scalar(value)?,
            "parent" => f.parent = yaml_scalar(value)?,
            "labels" => f.labels = Some(yaml_list(value)?),
            "blockers" => f.blockers = Some(yaml_list(value)?),
            _ => {}
        }
    }
    Ok(f)
}

/// A yaml.v3 scalar: plain, `'single'` or `"double"` (with `\t`, `\n`,
/// `\0`, `\xXX`, `\uXXXX` escapes); `~`/`null` is empty.
fn yaml_scalar(value: &str) -> Result<String, String> {
    if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return Ok(inner.replace("''", "'"));
    }
    let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) else {
        return Ok(if value == "~" || value == "null" {
            String::new()
        } else {
            value.to_string()
        });
    };
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let hex = |chars: &mut std::str::Chars, n: usize| {
            let h: String = chars.by_ref().take(n).collect();
            u32::from_str_radix(&h, 16).ok().and_then(char::from_u32)
        };
        let e = match chars.next() {
            Some('t') => Some('\t'),
            Some('n') => Some('\n'),
            Some('0') => Some('\0'),
            Some('"') => Some('"'),
            Some('\\') => Some('\\'),
            Some('x') => hex(&mut chars, 2),
            Some('u') => hex(&mut chars, 4),
            _ => None,
        };
        out.push(e.ok_or_else(|| format!("yaml: bad escape in {value:?}"))?);
    }
    Ok(out)
}

/// A flow list `[a, b]`, or one scalar.
fn yaml_list(value: &str) -> Result<Vec<String>, String> {
    let items = match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        Some(inner) => inner.split(',').map(str::trim).collect(),
        None => vec![value],
    };
    items
        .into_iter()
        .filter(|i| !i.is_empty())
        .map(yaml_scalar)
        .collect()
}

impl State {
    fn mtab(&self) -> String {
        // Go map order: random. Reversed at random here, so no test can
        // lean on an order.
        let mut lines: Vec<String> = self
            .mounts
            .iter()
            .map(|(n, c)| format!("{n}\t{c}\n"))
            .collect();
        if RandomState::new().hash_one(lines.len()) % 2 == 0 {
            lines.reverse();
        }
        lines.concat()
    }

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

    /// `doMount`: the directory must exist and be a project of
    /// `ProjectDirs` (resolved as 9beads resolves it); the name is random;
    /// a name or a cwd mounted twice is refused.
    fn mount(&mut self, cwd: &str) -> Result<(), String> {
        if std::fs::metadata(cwd).is_err() {
            return Err(format!("directory does not exist: {cwd}"));
        }
        let cwd = self.resolve(cwd)?;
        let name = short_id();
        if self.mounts.contains_key(&name) {
            return Err(format!("mount {name:?} already exists"));
        }
        if let Some((m, _)) = self.mounts.iter().find(|(_, c)| **c == cwd) {
            return Err(format!("path already mounted as {m}"));
        }
        self.mounts.insert(name.clone(), cwd.clone());
        self.append(&[("type", "mount"), ("name", &name), ("cwd", &cwd)]);
        Ok(())
    }

    /// `doMount`'s check against `config.ProjectDirs`.
    fn resolve(&self, cwd: &str) -> Result<String, String> {
        if self.project_dirs.is_empty() {
            return Ok(cwd.to_string());
        }
        for dir in &self.project_dirs {
            let Some(rel) = cwd.strip_prefix(&format!("{dir}/")) else {
                continue;
            };
            let parts: Vec<&str> = rel.splitn(3, '/').collect();
            match parts[..] {
                [one] if !one.is_empty() => return Ok(cwd.to_string()),
                [first, _] => return Ok(Path::new(dir).join(first).display().to_string()),
                _ => {}
            }
        }
        Err(format!(
            "mount path must be at most 1 level below a project dir ({:?})",
            self.project_dirs
        ))
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

    /// `handleNewWrite`: front matter with a title; the bead is `open`
    /// unless it says otherwise; parent and blockers become dependencies.
    fn new_bead(&mut self, mount: &str, content: &str) -> Result<(), String> {
        let (front, body) =
            split_front(content).ok_or("new: content must begin with frontmatter (---)")??;
        let f = parse_front(front).map_err(|e| format!("new: parse frontmatter: {e}"))?;
        if f.title.is_empty() {
            return Err("new: title is required".into());
        }
        let (store, mount) = self.store(mount)?;
        let parent = (!f.parent.is_empty()).then_some(f.parent.as_str());
        let id = store.next_id(parent);
        let mut deps: Vec<(String, DepKind)> = parent
            .map(|p| (p.to_string(), DepKind::ParentChild))
            .into_iter()
            .collect();
        for b in f.blockers.unwrap_or_default() {
            deps.push((b, DepKind::Blocks));
        }
        store.beads.push(Bead {
            id: id.clone(),
            title: f.title,
            description: body.trim_end_matches('\n').to_string(),
            status: if f.status.is_empty() {
                "open".into()
            } else {
                f.status
            },
            assignee: String::new(),
            labels: f.labels.unwrap_or_default(),
            deps,
            defer_until: None,
            updated: today(),
        });
        self.append(&[("type", "created"), ("id", &id), ("mount", &mount)]);
        Ok(())
    }

    /// `handleMountEndpointWrite` and the `cmd*` functions it calls.
    fn endpoint(&mut self, mount: &str, endpoint: &str, input: &str) -> Result<(), String> {
        let args = parse_args(input).map_err(|e| format!("{endpoint}: {e}"))?;
        if endpoint == "init" {
            let (store, _) = self.store(mount)?;
            store.prefix = Some(args.first().cloned().unwrap_or_else(|| "bd".into()));
            return Ok(());
        }
        let Some((id, rest)) = args.split_first() else {
            return Err(format!("{endpoint}: bead ID required"));
        };
        let (_, kv) = parse_kv(rest);
        let second = || {
            rest.first()
                .cloned()
                .ok_or_else(|| format!("{endpoint}: second argument required"))
        };
        let emit = match endpoint {
            "claim" => {
                let who = kv
                    .get("assignee")
                    .cloned()
                    .unwrap_or_else(|| "9beads".into());
                self.update(mount, id, |b| {
                    b.status = "in_progress".into();
                    b.assignee = who;
                })?;
                Some("claimed")
            }
            "unclaim" => {
                self.update(mount, id, |b| {
                    b.status = "open".into();
                    b.assignee.clear();
                })?;
                None
            }
            "open" | "reopen" => {
                self.update(mount, id, |b| b.status = "open".into())?;
                None
            }
            "defer" => {
                let until = kv.get("until").cloned();
                self.update(mount, id, |b| {
                    b.status = "deferred".into();
                    if until.is_some() {
                        b.defer_until = until;
                    }
                })?;
                None
            }
            "complete" | "fail" => {
                self.update(mount, id, |b| b.status = "closed".into())?;
                Some(if endpoint == "complete" {
                    "completed"
                } else {
                    "failed"
                })
            }
            "delete" => {
                let (store, _) = self.store(mount)?;
                store.bead(id)?;
                store.beads.retain(|b| b.id != *id);
                Some("deleted")
            }
            "label" | "unlabel" => {
                let label = second()?;
                let add = endpoint == "label";
                self.update(mount, id, |b| {
                    b.labels.retain(|l| *l != label);
                    if add {
                        b.labels.push(label);
                    }
                })?;
                None
            }
            "dep" | "relate" => {
                let on = second()?;
                let kind = if endpoint == "dep" {
                    DepKind::Blocks
                } else {
                    DepKind::Related
                };
                self.update(mount, id, |b| b.deps.push((on, kind)))?;
                None
            }
            "undep" => {
                let on = second()?;
                self.update(mount, id, |b| b.deps.retain(|(d, _)| *d != on))?;
                None
            }
            other => return Err(format!("unknown endpoint: {other}")),
        };
        if let Some(kind) = emit {
            self.append(&[("type", kind), ("id", id), ("mount", mount)]);
        }
        Ok(())
    }

    /// `UpdateIssue`: the bead must exist; `updated` is today.
    fn update(
        &mut self,
        mount: &str,
        id: &str,
        change: impl FnOnce(&mut Bead),
    ) -> Result<(), String> {
        let (store, _) = self.store(mount)?;
        let b = store.bead(id)?;
        change(b);
        b.updated = today();
        Ok(())
    }

    /// `handleBeadWrite`: without front matter only the description,
    /// silently; with it the title (empty when absent), description,
    /// status when given, labels and `blocks` dependencies when given, and
    /// `updated` is emitted.
    fn bead_write(&mut self, mount: &str, id: &str, content: &str) -> Result<(), String> {
        let Some(split) = split_front(content) else {
            return self.update(mount, id, |b| b.description = content.trim().to_string());
        };
        let (front, body) = split?;
        let f = parse_front(front).map_err(|e| format!("parse frontmatter for {id}: {e}"))?;
        self.update(mount, id, |b| {
            b.title = f.title;
            b.description = body.trim_end_matches('\n').to_string();
            if !f.status.is_empty() {
                b.status = f.status;
            }
            if let Some(labels) = f.labels {
                b.labels = labels;
            }
            if let Some(want) = f.blockers {
                b.deps
                    .retain(|(on, k)| *k != DepKind::Blocks || want.contains(on));
                for w in want {
                    if !b
                        .deps
                        .iter()
                        .any(|(on, k)| *on == w && *k == DepKind::Blocks)
                    {
                        b.deps.push((w, DepKind::Blocks));
                    }
                }
            }
        })?;
        self.append(&[("type", "updated"), ("id", id), ("mount", mount)]);
        Ok(())
    }

    /// `handleWrite`: the text trimmed, an empty one ignored (`new` and
    /// bead files get it as written).
    fn write(&mut self, path: &str, text: &str) -> Result<(), String> {
        let input = text.trim();
        if input.is_empty() {
            return Ok(());
        }
        let parts: Vec<&str> = path.splitn(2, '/').collect();
        match parts[..] {
            ["mount"] => self.mount(input),
            ["umount"] => self.umount(input),
            [_] => Err(format!("invalid path: /{path}")),
            [mount, "new"] => self.new_bead(mount, text),
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

    /// `GetReadyWork(WorkFilter{})`: open or in_progress, not deferred to
    /// the future, not blocked.
    fn is_ready(&self, bead: &Bead, depth: usize) -> bool {
        let deferred = bead
            .defer_until
            .as_deref()
            .is_some_and(|t| t > chrono_now().as_str());
        matches!(bead.status.as_str(), "open" | "in_progress")
            && !deferred
            && !self.blocked(bead, depth)
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
            yaml_string(&b.title),
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

/// A string as yaml.v3 writes it: plain where it can be, else
/// double-quoted with escapes (close enough to JSON's for these titles).
fn yaml_string(s: &str) -> String {
    let plain = !s.is_empty()
        && s.trim() == s
        && !s.starts_with([
            '-', '?', '[', ']', '{', '}', ',', '&', '*', '!', '|', '>', '%', '@', '`', '"', '\'',
        ])
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.chars().any(char::is_control);
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap()
    }
}

/// Now in RFC 3339 UTC, comparable as a string with `defer until` stamps
/// written in UTC (`2099-01-01T00:00:00Z`).
fn chrono_now() -> String {
    format!("{}T23:59:59Z", today())
}

impl Tree for Beads {
    /// `pathType`; nothing but the empty mount point while stopped.
    fn node(&self, path: &str) -> Option<Node> {
        let s = self.state.lock().unwrap();
        let parts: Vec<&str> = path.split('/').collect();
        match parts[..] {
            [""] => Some(Node::Dir),
            _ if s.down => None,
            [f] if ROOT_FILES.contains(&f) => Some(Node::File),
            [m] if s.mounts.contains_key(m) => Some(Node::Dir),
            [m, f] if s.mounts.contains_key(m) => {
                if MOUNT_FILES.contains(&f) || ENDPOINTS.contains(&f) {
                    return Some(Node::File);
                }
                let cwd = &s.mounts[m];
                s.stores.get(cwd)?.get(f).map(|_| Node::File)
            }
            _ => None,
        }
    }

    /// `readDir`.
    fn list(&self, dir: &str) -> Vec<String> {
        let s = self.state.lock().unwrap();
        if s.down {
            return Vec::new();
        }
        let mut names: Vec<String>;
        if dir.is_empty() {
            names = ROOT_FILES.iter().map(|f| f.to_string()).collect();
            names.extend(s.mounts.keys().cloned());
        } else if let Some(cwd) = s.mounts.get(dir) {
            names = MOUNT_FILES
                .iter()
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
            Node::File if base == "mount" || base == "umount" => 0o222,
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

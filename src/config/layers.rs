//! The four figment layers — built-in defaults, the TOML file, environment
//! variables, flags — each tagged with where it came from, and the lookup
//! that answers "which layer set this key?" for `reveille check` and for
//! error messages.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use figment::providers::{Format, Serialized, Toml};
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};

use super::lines::Lines;
use super::origin::Origin;
use super::raw::RawConfig;
use super::suggest::suggest;
use super::ConfigError;

/// Prefix of the environment variables that set configuration keys.
pub(crate) const ENV_PREFIX: &str = "REVEILLE_";
/// Separator between section, key and map entry in a variable name.
pub(crate) const ENV_SEPARATOR: &str = "__";

/// Keys whose environment value is parsed as an inline array or table
/// (`[a, b]`, `{ "agent-1" = "sess" }`); every other value stays a string.
const STRUCTURED_KEYS: &[&str] = &["events.mounts", "events.assignees", "notify.command"];

/// Read a configuration file that must be a regular file. Opened
/// non-blocking and checked before reading, so `--config` naming a FIFO
/// cannot hang `check` or `run` (waiting for a writer) and a device such as
/// `/dev/zero` cannot be read forever.
fn read_regular(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::other(format!("is {what}")));
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

/// The metadata names that identify each layer.
const DEFAULT_NAME: &str = "default";
const ENV_NAME: &str = "env";
const FLAG_PROJECT: &str = "flag --project";
const ONLY_PROJECT: &str = "the only configured project";

/// One figment layer: data already read and parsed, plus its metadata, so
/// reading and parsing errors surface before any merging.
#[derive(Debug, Clone)]
pub(crate) struct Layer {
    metadata: Metadata,
    data: Dict,
    /// Where each key is written (a file layer; empty for the others).
    lines: Lines,
}

impl Provider for Layer {
    fn metadata(&self) -> Metadata {
        self.metadata.clone()
    }

    fn data(&self) -> figment::Result<Map<Profile, Dict>> {
        let mut map = Map::new();
        map.insert(Profile::Default, self.data.clone());
        Ok(map)
    }
}

fn default_profile(map: Map<Profile, Dict>) -> Dict {
    map.into_iter()
        .find(|(p, _)| *p == Profile::Default)
        .map(|(_, d)| d)
        .unwrap_or_default()
}

impl Layer {
    /// The built-in defaults for project `name`.
    pub fn defaults(name: &str) -> Layer {
        let data = Serialized::defaults(RawConfig::defaults(name))
            .data()
            .expect("the defaults serialise");
        Layer {
            metadata: Metadata::named(DEFAULT_NAME),
            data: default_profile(data),
            lines: Lines::default(),
        }
    }

    /// The TOML file at `path`, and every problem reading it. An unreadable
    /// file is one problem and no layer. A syntax error names the file and
    /// the line; that line is then left out and the rest read again, so the
    /// keys after a typo are still checked (and still locate the state for
    /// `status`).
    pub fn file(path: &Path) -> (Option<Layer>, Vec<ConfigError>) {
        let problem = |line: Option<usize>, message: String| ConfigError {
            key: None,
            value: None,
            origin: Some(Origin::file(path).at_line(line)),
            message,
        };
        let text = match read_regular(path) {
            Ok(text) => text,
            Err(e) => {
                return (
                    None,
                    vec![problem(
                        None,
                        format!("cannot read the configuration file: {e}"),
                    )],
                )
            }
        };
        let mut lines: Vec<&str> = text.lines().collect();
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        // Each round leaves out one line, so this ends.
        loop {
            let joined = lines.join("\n");
            match Toml::string(&joined).data() {
                Ok(data) => {
                    let layer = Layer {
                        metadata: Metadata::from(
                            file_origin(path),
                            figment::Source::File(path.to_path_buf()),
                        ),
                        data: default_profile(data),
                        lines: Lines::of(&joined),
                    };
                    return (Some(layer), problems);
                }
                Err(e) => {
                    let (line, message) = syntax_error(&e.to_string());
                    // One report per line at fault, however many rounds
                    // it takes to read past it.
                    if seen.insert(line) {
                        problems.push(problem(line, message));
                    }
                    // Blank the line at fault (numbering kept); an error at
                    // a blank line or past the end (an unclosed bracket)
                    // drops the last line instead.
                    match line {
                        Some(n) if n >= 1 && n <= lines.len() && !lines[n - 1].is_empty() => {
                            lines[n - 1] = ""
                        }
                        _ if !lines.is_empty() => {
                            lines.pop();
                        }
                        _ => return (None, problems),
                    }
                }
            }
        }
    }

    /// This layer without `keys` (dotted, as errors name them): what is
    /// left when the offending keys fall back to the layers below.
    pub fn without(&self, keys: &BTreeSet<String>) -> Layer {
        let mut data = self.data.clone();
        for key in keys {
            remove(&mut data, &key_path(key));
        }
        Layer {
            metadata: self.metadata.clone(),
            data,
            lines: self.lines.clone(),
        }
    }

    /// The layer's keys.
    pub fn dict(&self) -> &Dict {
        &self.data
    }

    /// The project name taken from `file`, the only configuration file
    /// there is: below the file itself, which may still name the project.
    pub fn only_project(name: &str, file: &Path) -> Layer {
        let mut layer = Layer::project_flag(name);
        layer.metadata = Metadata::from(ONLY_PROJECT, figment::Source::File(file.to_path_buf()));
        layer
    }

    /// `--project NAME`.
    pub fn project_flag(name: &str) -> Layer {
        let mut project = Dict::new();
        project.insert("name".into(), Value::from(name.to_string()));
        let mut data = Dict::new();
        data.insert("project".into(), Value::from(project));
        Layer {
            metadata: Metadata::named(FLAG_PROJECT),
            data,
            lines: Lines::default(),
        }
    }
}

fn file_origin(path: &Path) -> String {
    format!("file {}", path.display())
}

/// A TOML syntax error on one line (a journal entry, one line per
/// problem on a terminal), and the line it is at: `TOML parse error at
/// line 3, column 8` + `invalid string` + `expected `"`, `'`` becomes line
/// 3 and `TOML syntax error at column 8: invalid string; expected …`,
/// without the source snippet.
fn syntax_error(message: &str) -> (Option<usize>, String) {
    let mut lines = message.lines().map(str::trim_end);
    let head = lines.next().unwrap_or_default().to_string();
    let rest: Vec<&str> = lines.filter(|l| !is_snippet(l)).collect();
    let line = syntax_error_line(&head);
    let head = match (line, head.split_once(", column ")) {
        (Some(_), Some((_, column))) => format!("TOML syntax error at column {column}"),
        _ => head,
    };
    let message = if rest.is_empty() {
        head
    } else {
        format!("{head}: {}", rest.join("; "))
    };
    (line, message)
}

/// A line of the quoted source in a TOML error: blank, `  |`, `  | ^`, or
/// `3 | mode = `.
fn is_snippet(line: &str) -> bool {
    let t = line.trim_start();
    let numbered = t
        .split_once(" |")
        .is_some_and(|(n, _)| n.trim().parse::<usize>().is_ok());
    t.is_empty() || t.starts_with('|') || numbered
}

/// The line a TOML syntax error points at (`… at line 3, column 8`).
/// Only the first error of a file is shown: later ones are often echoes of
/// it (a broken string swallowing the next lines).
fn syntax_error_line(message: &str) -> Option<usize> {
    let rest = &message[message.find(" line ")? + " line ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The path of a dotted key inside the data: a map entry's name is one
/// segment (`events.assignees."a.b"`), an array element (`events.mounts[1]`)
/// stands for its whole array.
fn key_path(key: &str) -> Vec<String> {
    let key = match key.strip_suffix(']').and_then(|k| k.rsplit_once('[')) {
        Some((array, _)) => array,
        None => key,
    };
    match split_entry(key) {
        Some((table, entry)) => {
            let mut path: Vec<String> = table.split('.').map(str::to_string).collect();
            path.push(entry);
            path
        }
        None => key.split('.').map(str::to_string).collect(),
    }
}

fn remove(dict: &mut Dict, path: &[String]) {
    match path {
        [] => {}
        [last] => {
            dict.remove(last);
        }
        [first, rest @ ..] => {
            if let Some(Value::Dict(_, inner)) = dict.get_mut(first) {
                remove(inner, rest);
            }
        }
    }
}

/// The environment layer, and which variable set which dotted key.
#[derive(Debug, Clone)]
pub(crate) struct EnvLayer {
    pub layer: Layer,
    /// Dotted key (`events.assignees` or `project.plan_dir`) → variable name.
    vars: BTreeMap<String, String>,
}

impl EnvLayer {
    /// Reads the `REVEILLE_<SECTION>__<KEY>` variables out of `env`.
    /// Section and key are lowercased; anything after a second `__` is a map
    /// entry name (`REVEILLE_EVENTS__ASSIGNEES__bob`) taken verbatim.
    /// A variable with the prefix but no `__` that looks like a key of
    /// `defaults` misspelt (`REVEILLE_PROJECT_PLAN_DIR`) is a problem naming
    /// the variable meant; others (`REVEILLE_KEEP_TMP`, the tests' knobs)
    /// are not configuration and are ignored.
    /// A variable that cannot be read is a problem and is left out.
    pub fn from_env(
        env: &BTreeMap<String, String>,
        defaults: &Dict,
    ) -> (EnvLayer, Vec<ConfigError>) {
        let mut problems = Vec::new();
        let mut data = Dict::new();
        let mut vars = BTreeMap::new();
        for (var, raw) in env {
            let Some(rest) = var.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            let origin = Origin::Env(var.clone());
            let fail = |message: String| ConfigError {
                key: None,
                value: Some(format!("{raw:?}")),
                origin: Some(origin.clone()),
                message,
            };
            if !rest.contains(ENV_SEPARATOR) {
                if let Some(meant) = misspelt_variable(rest, defaults) {
                    problems.push(fail(format!(
                        "not a configuration variable (did you mean {meant}? section and key are separated by two underscores)"
                    )));
                }
                continue;
            }
            let path: Vec<String> = rest
                .split(ENV_SEPARATOR)
                .enumerate()
                .map(|(i, s)| {
                    if i < 2 {
                        s.to_ascii_lowercase()
                    } else {
                        s.to_string()
                    }
                })
                .collect();
            if path.iter().any(String::is_empty) {
                problems.push(fail("empty key segment in the variable name".into()));
                continue;
            }
            let dotted = path.join(".");
            let value = if STRUCTURED_KEYS.contains(&dotted.as_str()) {
                // figment's parser falls back to a plain string on bad syntax.
                match raw.parse::<Value>() {
                    Ok(v @ (Value::Array(..) | Value::Dict(..))) => v,
                    _ => {
                        problems.push(fail(
                            "expected an inline array `[a, b]` or table `{ \"k\" = \"v\" }`".into(),
                        ));
                        continue;
                    }
                }
            } else {
                Value::from(raw.clone())
            };
            insert(&mut data, &path, value);
            vars.insert(dotted, var.clone());
        }
        let layer = EnvLayer {
            layer: Layer {
                metadata: Metadata::named(ENV_NAME),
                data,
                lines: Lines::default(),
            },
            vars,
        };
        (layer, problems)
    }

    /// This layer without `keys`.
    pub fn without(&self, keys: &BTreeSet<String>) -> EnvLayer {
        EnvLayer {
            layer: self.layer.without(keys),
            vars: self.vars.clone(),
        }
    }

    /// The variable that set `key` (or the table containing it).
    fn var_for(&self, key: &str) -> Option<&str> {
        let mut k = key;
        loop {
            if let Some(v) = self.vars.get(k) {
                return Some(v);
            }
            k = &k[..k.rfind('.')?];
        }
    }

    /// The value `REVEILLE_PROJECT__NAME` gives, if any.
    pub fn project_name(&self) -> Option<&str> {
        match self.layer.data.get("project")?.as_dict()?.get("name")? {
            Value::String(_, s) => Some(s),
            _ => None,
        }
    }
}

/// The variable that sets `section.key`: `REVEILLE_PROJECT__PLAN_DIR`.
pub(crate) fn env_name(section: &str, key: &str) -> String {
    format!(
        "{ENV_PREFIX}{}{ENV_SEPARATOR}{}",
        section.to_ascii_uppercase(),
        key.to_ascii_uppercase()
    )
}

/// The configuration variable a `REVEILLE_…` name without `__` was meant
/// to be, if it looks like one: the same letters with the underscores
/// wrong (`PROJECT_PLAN_DIR`), a section and a near-miss key
/// (`PROJECT_PLANDIR`), or a key without its section (`PLAN_DIR`).
fn misspelt_variable(rest: &str, defaults: &Dict) -> Option<String> {
    let squash = |s: &str| s.replace('_', "").to_ascii_lowercase();
    let lower = rest.to_ascii_lowercase();
    let keys: Vec<(&str, &str)> = defaults
        .iter()
        .filter_map(|(section, v)| Some((section, v.as_dict()?)))
        .flat_map(|(section, keys)| keys.keys().map(move |k| (section.as_str(), k.as_str())))
        .collect();
    let same_letters = keys
        .iter()
        .find(|(s, k)| squash(&format!("{s}{k}")) == squash(rest));
    let in_section = || {
        keys.iter().find_map(|(s, _)| {
            let key = lower.strip_prefix(s)?.strip_prefix('_')?;
            let names: Vec<&str> = keys
                .iter()
                .filter(|(s2, _)| s2 == s)
                .map(|(_, k)| *k)
                .collect();
            Some((*s, suggest(key, &names)?))
        })
    };
    let sectionless = || keys.iter().find(|(_, k)| *k == lower).copied();
    let (section, key) = same_letters
        .copied()
        .or_else(in_section)
        .or_else(sectionless)?;
    Some(env_name(section, key))
}

/// Inserts `value` at `path` into `dict`, merging tables.
fn insert(dict: &mut Dict, path: &[String], value: Value) {
    let (first, rest) = path.split_first().expect("non-empty path");
    if rest.is_empty() {
        match (dict.get_mut(first), value) {
            (Some(Value::Dict(_, old)), Value::Dict(_, new)) => old.extend(new),
            (_, value) => {
                dict.insert(first.clone(), value);
            }
        }
        return;
    }
    let entry = dict
        .entry(first.clone())
        .or_insert_with(|| Value::from(Dict::new()));
    if entry.as_dict().is_none() {
        *entry = Value::from(Dict::new());
    }
    if let Value::Dict(_, inner) = entry {
        insert(inner, rest, value);
    }
}

/// All layers merged, lowest first, with what is needed to tell a key's origin.
pub(crate) struct Layers {
    pub figment: Figment,
    env: EnvLayer,
    /// Where the file's keys are written.
    file_lines: Lines,
}

/// The layers above the defaults, lowest first.
pub(crate) struct Above<'a> {
    /// The project chosen as the only configured one.
    pub chosen: Option<&'a Layer>,
    pub file: Option<&'a Layer>,
    pub env: &'a EnvLayer,
    pub flag: Option<&'a Layer>,
}

impl Layers {
    pub fn new(defaults: Layer, above: Above<'_>) -> Self {
        let mut figment = Figment::from(defaults);
        for layer in [above.chosen, above.file].into_iter().flatten() {
            figment = figment.merge(layer.clone());
        }
        figment = figment.merge(above.env.layer.clone());
        if let Some(flag) = above.flag {
            figment = figment.merge(flag.clone());
        }
        Layers {
            figment,
            env: above.env.clone(),
            file_lines: above.file.map(|f| f.lines.clone()).unwrap_or_default(),
        }
    }

    /// Where `key` came from: `default`, `file PATH`, `env VAR` or
    /// `flag --project`. Entries of a map table are keyed as
    /// [`entry_key`] writes them.
    pub fn origin(&self, key: &str) -> Origin {
        // An array element (`events.mounts[0]`) comes from where its array
        // does; figment has no metadata for the element itself.
        let key = match key.strip_suffix(']').and_then(|k| k.rsplit_once('[')) {
            Some((array, index)) if index.bytes().all(|b| b.is_ascii_digit()) => array,
            _ => key,
        };
        let metadata = match split_entry(key) {
            Some((table, entry)) => self
                .figment
                .find_value(table)
                .ok()
                .and_then(|t| t.as_dict()?.get(&entry).map(Value::tag))
                .and_then(|tag| self.figment.get_metadata(tag)),
            None => self.figment.find_metadata(key),
        };
        match metadata {
            Some(md) if md.name == ENV_NAME => {
                let dotted = match split_entry(key) {
                    Some((table, entry)) => format!("{table}.{entry}"),
                    None => key.to_string(),
                };
                let var = self.env.var_for(&dotted).unwrap_or("REVEILLE_*");
                Origin::Env(var.to_string())
            }
            Some(md) if md.name == FLAG_PROJECT => Origin::Flag,
            Some(md) if md.name == ONLY_PROJECT => match &md.source {
                Some(figment::Source::File(path)) => Origin::OnlyProject(path.clone()),
                _ => Origin::Default,
            },
            Some(md) => match &md.source {
                Some(figment::Source::File(path)) => Origin::File {
                    path: path.clone(),
                    line: self.file_lines.find(&key_path(key)),
                },
                _ => Origin::Default,
            },
            None => Origin::Default,
        }
    }

    /// The value at `key` as written, for error messages.
    pub fn shown_value(&self, key: &str) -> Option<String> {
        let value = self.figment.find_value(key).ok()?;
        serde_json::to_string(&value).ok()
    }
}

/// Configuration keys that are tables of user-chosen names.
pub(crate) const MAP_TABLES: &[&str] = &["events.assignees"];

/// The dotted key of entry `name` in map `table`, quoting the name as TOML
/// does when it is not a bare key (`events.assignees."a.b"`).
pub(crate) fn entry_key(table: &str, name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        format!("{table}.{name}")
    } else {
        let quoted = serde_json::to_string(name).expect("strings serialise");
        format!("{table}.{quoted}")
    }
}

/// The inverse of [`entry_key`]: `(table, name)` if `key` is a map entry.
fn split_entry(key: &str) -> Option<(&'static str, String)> {
    MAP_TABLES.iter().find_map(|table| {
        let rest = key.strip_prefix(table)?.strip_prefix('.')?;
        let name = if rest.starts_with('"') {
            serde_json::from_str(rest).ok()?
        } else {
            rest.to_string()
        };
        Some((*table, name))
    })
}

/// Where the configuration file is looked for when `--config` is not
/// given: `$XDG_CONFIG_HOME/reveille/<project>.toml` (none when neither
/// `XDG_CONFIG_HOME` nor `HOME` can say where that is).
pub(crate) fn default_file(project: &str, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let base = super::expand::var(env, "XDG_CONFIG_HOME").ok()?;
    Some(
        PathBuf::from(base)
            .join("reveille")
            .join(format!("{project}.toml")),
    )
}

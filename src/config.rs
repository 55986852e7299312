//! Configuration: figment layers (built-in defaults < TOML file < environment
//! < flags) deserialised into raw keys, then validated into the [`Settings`]
//! the daemon runs on. [`ConfigError`] is the one error type of this
//! boundary; [`render_check`] is what `reveille check` prints.
//!
//! The environment is an explicit snapshot ([`LoadOptions::env`]) so that
//! loading is a function of its inputs: tests never touch process state.
//! See `doc/CONFIG.md` for every key.

mod check;
mod expand;
mod layers;
mod lines;
mod objects;
mod origin;
mod raw;
mod reference;
mod schema;
pub mod secret;
mod settings;
mod suggest;
#[cfg(test)]
mod tests;
mod wording;

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

pub use check::{not_directories, render_check, what_it_is};
pub use objects::engine_config;
pub use origin::Origin;
pub use reference::{reference, KeyReference};
pub use settings::{
    validate_name, BeadsSettings, ClaudeSettings, CodexSettings, Delivery, Desktop, EventSettings,
    FanoutSettings, Framing, LogSettings, LogTarget, Mode, NotifySettings, OpencodeSettings,
    ProjectSettings, PromptSettings, SessionSettings, Settings, StateSettings, MAX_NAME_BYTES,
};

use expand::EnvSnapshot;
use layers::{Above, EnvLayer, Layer, Layers};

/// The inputs of [`load`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadOptions {
    /// `--config FILE`: must exist. `None` = `$XDG_CONFIG_HOME/reveille/<project>.toml`
    /// if that exists, else no file.
    pub config: Option<PathBuf>,
    /// `--project NAME`: sets `project.name` (highest precedence).
    pub project: Option<String>,
    /// The environment to read `REVEILLE_*`, `HOME` and path variables from.
    /// `None` = the process environment (variables that are not UTF-8 are
    /// skipped).
    pub env: Option<Vec<(String, String)>>,
}

/// A loaded configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The validated settings.
    pub settings: Settings,
    /// Every resolved key, in file order: `(dotted key, value as TOML would
    /// write it, origin)`.
    pub sources: Vec<(String, String, Origin)>,
    /// The configuration file that was read, if any.
    pub file: Option<PathBuf>,
    /// Every path where a configuration file was looked for, in order.
    pub looked_at: Vec<PathBuf>,
}

/// Why a configuration could not be loaded. `Display` gives the key, its
/// value and where it came from, when they are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The dotted key (`project.mode`), when the error concerns one key.
    pub key: Option<String>,
    /// The offending value as written, when known.
    pub value: Option<String>,
    /// The layer it came from (for a file, the line), when known.
    pub origin: Option<Origin>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.key, &self.value, &self.origin) {
            (Some(k), v, o) => {
                match v {
                    Some(v) => write!(f, "{k} = {v}: {}", self.message)?,
                    None => write!(f, "{k}: {}", self.message)?,
                }
                if let Some(o) = o {
                    write!(f, " (from {o})")?;
                }
                Ok(())
            }
            (None, v, o) => {
                if let Some(o) = o {
                    write!(f, "{o}: ")?;
                }
                if let Some(v) = v {
                    write!(f, "value {v}: ")?;
                }
                f.write_str(&self.message)
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// Turns a figment extraction error into a [`ConfigError`] naming the key,
/// the value and the layer it came from.
fn from_figment(e: figment::Error, layers: &Layers) -> ConfigError {
    let key = e.path.join(".");
    let message = wording::kind(&e.kind);
    if key.is_empty() {
        return ConfigError {
            key: None,
            value: None,
            origin: None,
            message,
        };
    }
    ConfigError {
        value: layers.shown_value(&key),
        origin: Some(layers.origin(&key)),
        key: Some(key),
        message,
    }
}

fn process_env() -> EnvSnapshot {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// The projects configured in `$XDG_CONFIG_HOME/reveille/`: each
/// `<project>.toml` (not hidden, a valid project name), by name.
fn configured_in(env: &EnvSnapshot) -> Vec<(String, PathBuf)> {
    let Some(dir) =
        layers::default_file("default", env).and_then(|f| Some(f.parent()?.to_path_buf()))
    else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".toml")?;
            let usable = !stem.starts_with('.') && validate_name("project", stem).is_ok();
            (usable && e.path().is_file()).then(|| (stem.to_string(), e.path()))
        })
        .collect();
    found.sort();
    found
}

/// The projects configured for this user (`~/.config/reveille/*.toml`),
/// by name, with their files. `env` as in [`LoadOptions::env`].
pub fn configured_projects(env: Option<&[(String, String)]>) -> Vec<(String, PathBuf)> {
    let env: EnvSnapshot = match env {
        Some(vars) => vars.iter().cloned().collect(),
        None => process_env(),
    };
    configured_in(&env)
}

/// A name check failure for `project.name` before the layers are complete.
fn bad_project(name: &str, message: String, origin: Origin) -> ConfigError {
    ConfigError {
        key: Some("project.name".into()),
        value: Some(format!("{name:?}")),
        origin: Some(origin),
        message,
    }
}

/// Every problem of a configuration, in the order found: [`load`] reports
/// them all at once rather than one per attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl ConfigErrors {
    /// The first problem (tests of single mistakes).
    pub fn into_first(self) -> ConfigError {
        self.0.into_iter().next().expect("at least one problem")
    }
}

impl fmt::Display for ConfigErrors {
    /// One line: the problems joined with `; ` (a journal entry).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Loads and validates the configuration: defaults < file < environment <
/// `--project`. Every problem is reported, not only the first.
pub fn load(opts: &LoadOptions) -> Result<Loaded, ConfigErrors> {
    match load_salvaged(opts) {
        (Some(loaded), errors) if errors.is_empty() => Ok(loaded),
        (_, errors) => Err(ConfigErrors(errors)),
    }
}

/// [`load`] that also returns what could be salvaged: the settings with
/// every offending key left at the value of the layer below it. `status`
/// uses it to find the state directory when the file has gone bad while
/// the daemon runs on the last good one. `None` only when even the
/// defaults do not resolve (no `HOME`).
pub fn load_salvaged(opts: &LoadOptions) -> (Option<Loaded>, Vec<ConfigError>) {
    let env: EnvSnapshot = match &opts.env {
        Some(vars) => vars.iter().cloned().collect(),
        None => process_env(),
    };
    let (env_layer, mut errors) = EnvLayer::from_env(&env, Layer::defaults("default").dict());
    let flag = opts.project.as_deref().map(Layer::project_flag);

    // The default file is named after the project, so the name is needed
    // before the file is read: --project, else REVEILLE_PROJECT__NAME, else
    // the only project configured, else `default`.
    let mut chosen = None;
    let (file, looked_at) = match &opts.config {
        Some(path) => {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            (Some(path.clone()), vec![path])
        }
        None => {
            let only = match configured_in(&env).as_slice() {
                [(name, path)] => Some((name.clone(), path.clone())),
                _ => None,
            };
            let (name, origin) = match (&opts.project, env_layer.project_name(), &only) {
                (Some(n), _, _) => (n.as_str(), Origin::Flag),
                (None, Some(n), _) => (n, Origin::Env("REVEILLE_PROJECT__NAME".into())),
                (None, None, Some((n, path))) => {
                    chosen = Some(Layer::only_project(n, path));
                    (n.as_str(), Origin::OnlyProject(path.clone()))
                }
                (None, None, None) => ("default", Origin::Default),
            };
            match validate_name("project name", name) {
                Err(m) => {
                    errors.push(bad_project(name, m, origin));
                    (None, Vec::new())
                }
                Ok(()) => {
                    let candidate = layers::default_file(name, &env);
                    let found = candidate.clone().filter(|p| p.is_file());
                    (found, candidate.into_iter().collect())
                }
            }
        }
    };
    let file_layer = match file.as_deref().map(Layer::file) {
        Some((layer, problems)) => {
            errors.extend(problems);
            layer
        }
        None => None,
    };
    let layers = Sources {
        chosen,
        file: file_layer,
        env: env_layer,
        flag,
    };
    let loaded = layers
        .resolve(&env, &mut errors)
        .map(|(settings, sources)| Loaded {
            settings,
            sources,
            file,
            looked_at,
        });
    dedup(&mut errors);
    (loaded, errors)
}

/// The same problem found in two rounds of [`Sources::resolve`] is one.
fn dedup(errors: &mut Vec<ConfigError>) {
    let mut seen = std::collections::BTreeSet::new();
    errors.retain(|e| seen.insert(e.to_string()));
}

/// Every resolved key: `(dotted key, value, origin)`, as [`Loaded::sources`].
type Resolved = Vec<(String, String, Origin)>;

/// The layers above the defaults, as read.
struct Sources {
    /// The project name, when it is the only one configured.
    chosen: Option<Layer>,
    file: Option<Layer>,
    env: EnvLayer,
    flag: Option<Layer>,
}

impl Sources {
    fn layers(&self, defaults: Layer, dropped: &BTreeSet<String>) -> Layers {
        let without = |l: &Option<Layer>| l.as_ref().map(|l| l.without(dropped));
        let (file, flag) = (without(&self.file), without(&self.flag));
        Layers::new(
            defaults,
            Above {
                chosen: self.chosen.as_ref(),
                file: file.as_ref(),
                env: &self.env.without(dropped),
                flag: flag.as_ref(),
            },
        )
    }

    /// Resolves the settings, collecting every problem into `errors`. Each
    /// round drops the keys found at fault (they fall back to the layer
    /// below) and tries again, so the keys behind a bad one are checked too;
    /// a round that finds nothing new to drop ends it.
    fn resolve(
        &self,
        env: &EnvSnapshot,
        errors: &mut Vec<ConfigError>,
    ) -> Option<(Settings, Resolved)> {
        let mut dropped = BTreeSet::new();
        loop {
            let found = self.round(env, &dropped);
            let (problems, fatal) = match found {
                Ok(done) => return Some(done),
                Err(p) => p,
            };
            let before = dropped.len();
            dropped.extend(problems.iter().filter_map(|e| e.key.clone()));
            errors.extend(problems);
            if fatal || dropped.len() == before {
                return None;
            }
        }
    }

    /// One round: `Err((problems, fatal))`.
    fn round(
        &self,
        env: &EnvSnapshot,
        dropped: &BTreeSet<String>,
    ) -> Result<(Settings, Resolved), (Vec<ConfigError>, bool)> {
        // Pass one: the final project name, which the defaults depend on —
        // once every section is a table (`project = 3` has no name in it).
        let upper = self.layers(Layer::defaults("default"), dropped);
        let shape = schema::sections(&upper, Layer::defaults("default").dict());
        if !shape.is_empty() {
            return Err((shape, false));
        }
        let name: String = upper
            .figment
            .extract_inner_lossy("project.name")
            .map_err(|e| (vec![from_figment(e, &upper)], false))?;
        validate_name("project name", &name).map_err(|m| {
            (
                vec![bad_project(&name, m, upper.origin("project.name"))],
                false,
            )
        })?;
        // Pass two: everything, over defaults derived from that name.
        let defaults = Layer::defaults(&name);
        let layers = self.layers(defaults.clone(), dropped);
        let problems = schema::problems(&layers, defaults.dict());
        if !problems.is_empty() {
            return Err((problems, false));
        }
        let raw: raw::RawConfig = layers.figment.extract_lossy().map_err(|e| {
            let e = from_figment(e, &layers);
            let fatal = e.key.is_none();
            (vec![e], fatal)
        })?;
        let mut settings = Settings::from_raw(&raw, env).map_err(|invalid| {
            let problems = invalid
                .into_iter()
                .map(|i| ConfigError {
                    origin: Some(layers.origin(&i.key)),
                    key: Some(i.key),
                    value: Some(i.value),
                    message: i.message,
                })
                .collect();
            (problems, false)
        })?;
        // The example configuration spells the default out: that is still
        // the tracker's default place, not a choice to use a tracker.
        settings.events.path_set = raw.events.path != raw::RawConfig::defaults(&name).events.path;
        let sources = check::entries(&settings)
            .into_iter()
            .map(|(key, value)| {
                let origin = layers.origin(&key);
                (key, value, origin)
            })
            .collect();
        Ok((settings, sources))
    }
}

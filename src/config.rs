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
mod raw;
mod settings;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::PathBuf;

pub use check::render_check;
pub use settings::{
    validate_name, BeadsSettings, Delivery, EventSettings, Framing, LogSettings, LogTarget, Mode,
    ProjectSettings, PromptSettings, SessionSettings, Settings, StateSettings, MAX_NAME_BYTES,
};

use expand::EnvSnapshot;
use figment::error::Kind;
use layers::{EnvLayer, Layer, Layers};

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
    /// write it, origin)`. Origin is `default`, `file PATH`, `env VAR` or
    /// `flag --project`.
    pub sources: Vec<(String, String, String)>,
    /// The configuration file that was read, if any.
    pub file: Option<PathBuf>,
}

/// Why a configuration could not be loaded. `Display` gives the key, its
/// value and where it came from, when they are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The dotted key (`project.mode`), when the error concerns one key.
    pub key: Option<String>,
    /// The offending value as written, when known.
    pub value: Option<String>,
    /// `file PATH`, `env VAR`, `flag --project` or `default`.
    pub origin: Option<String>,
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
    let message = match &e.kind {
        Kind::UnknownField(_, expected) => {
            format!("unknown key; expected one of {}", expected.join(", "))
        }
        kind => kind.to_string(),
    };
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

/// A name check failure for `project.name` before the layers are complete.
fn bad_project(name: &str, message: String, origin: String) -> ConfigError {
    ConfigError {
        key: Some("project.name".into()),
        value: Some(format!("{name:?}")),
        origin: Some(origin),
        message,
    }
}

/// Loads and validates the configuration: defaults < file < environment <
/// `--project`.
pub fn load(opts: &LoadOptions) -> Result<Loaded, ConfigError> {
    let env: EnvSnapshot = match &opts.env {
        Some(vars) => vars.iter().cloned().collect(),
        None => process_env(),
    };
    let env_layer = EnvLayer::from_env(&env)?;
    let flag = opts.project.as_deref().map(Layer::project_flag);

    // The default file is named after the project, so the name is needed
    // before the file is read: --project, else REVEILLE_PROJECT__NAME.
    let file = match &opts.config {
        Some(path) => Some(std::path::absolute(path).unwrap_or_else(|_| path.clone())),
        None => {
            let (name, origin) = match (&opts.project, env_layer.project_name()) {
                (Some(n), _) => (n.as_str(), "flag --project".to_string()),
                (None, Some(n)) => (n, "env REVEILLE_PROJECT__NAME".to_string()),
                (None, None) => ("default", "default".to_string()),
            };
            validate_name("project name", name).map_err(|m| bad_project(name, m, origin))?;
            layers::default_file(name, &env)
        }
    };
    let file_layer = file.as_deref().map(Layer::file).transpose()?;

    // Pass one: the final project name, which the defaults depend on.
    let upper = Layers::new(
        Layer::defaults("default"),
        file_layer.as_ref(),
        &env_layer,
        flag.as_ref(),
    );
    let name: String = upper
        .figment
        .extract_inner_lossy("project.name")
        .map_err(|e| from_figment(e, &upper))?;
    validate_name("project name", &name)
        .map_err(|m| bad_project(&name, m, upper.origin("project.name")))?;

    // Pass two: everything, over defaults derived from that name.
    let layers = Layers::new(
        Layer::defaults(&name),
        file_layer.as_ref(),
        &env_layer,
        flag.as_ref(),
    );
    let raw: raw::RawConfig = layers
        .figment
        .extract_lossy()
        .map_err(|e| from_figment(e, &layers))?;
    let settings = Settings::from_raw(&raw, &env).map_err(|i| ConfigError {
        origin: Some(layers.origin(&i.key)),
        key: Some(i.key),
        value: Some(i.value),
        message: i.message,
    })?;
    let sources = check::entries(&settings)
        .into_iter()
        .map(|(key, value)| {
            let origin = layers.origin(&key);
            (key, value, origin)
        })
        .collect();
    Ok(Loaded {
        settings,
        sources,
        file,
    })
}

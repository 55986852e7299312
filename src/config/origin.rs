//! Where a configuration value came from — the built-in defaults, a line
//! of the file, an environment variable, a flag — as a type, so errors and
//! `reveille check` name it the same way and a file's line is never lost.

use std::fmt;
use std::path::PathBuf;

/// The layer (and for a file, the line) a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The built-in defaults.
    Default,
    /// The configuration file; the line where the key (or its section) is
    /// written, when known.
    File { path: PathBuf, line: Option<usize> },
    /// An environment variable, by name.
    Env(String),
    /// `--project NAME`.
    Flag,
    /// The project name, taken from the only configuration file in
    /// `$XDG_CONFIG_HOME/reveille/` (no `--project` given).
    OnlyProject(PathBuf),
}

impl Origin {
    /// A file origin without a line.
    pub fn file(path: impl Into<PathBuf>) -> Origin {
        Origin::File {
            path: path.into(),
            line: None,
        }
    }

    /// The same origin at `line` (for a file; others have no lines).
    pub fn at_line(self, at: Option<usize>) -> Origin {
        match self {
            Origin::File { path, line } => Origin::File {
                path,
                line: at.or(line),
            },
            other => other,
        }
    }

    /// The line in the file, if the value came from one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Origin::File { line, .. } => *line,
            _ => None,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File { path, line: None } => write!(f, "file {}", path.display()),
            Origin::File {
                path,
                line: Some(n),
            } => write!(f, "file {}, line {n}", path.display()),
            Origin::Env(var) => write!(f, "env {var}"),
            Origin::Flag => f.write_str("flag --project"),
            Origin::OnlyProject(path) => {
                write!(f, "the only configured project, {}", path.display())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_read_as_words() {
        assert_eq!(Origin::Default.to_string(), "default");
        assert_eq!(Origin::file("/c/p.toml").to_string(), "file /c/p.toml");
        assert_eq!(
            Origin::file("/c/p.toml").at_line(Some(3)).to_string(),
            "file /c/p.toml, line 3"
        );
        assert_eq!(
            Origin::Env("REVEILLE_X__Y".into()).at_line(Some(3)).line(),
            None
        );
        assert_eq!(Origin::Flag.to_string(), "flag --project");
    }
}

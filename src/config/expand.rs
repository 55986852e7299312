//! Path expansion for configuration values: a leading `~`, `$VAR` and
//! `${VAR}`, read from an explicit environment snapshot (never the process
//! environment directly, so tests stay independent of each other).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The environment a configuration is resolved against.
pub(crate) type EnvSnapshot = BTreeMap<String, String>;

/// XDG base directories and their defaults relative to `$HOME`, used when the
/// variable is unset, empty or not absolute (as the XDG spec says).
const XDG_DEFAULTS: &[(&str, &str)] = &[
    ("XDG_STATE_HOME", ".local/state"),
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_CACHE_HOME", ".cache"),
];

/// `$HOME`, or an error saying why `~` cannot be expanded.
fn home(env: &EnvSnapshot) -> Result<&str, String> {
    match env.get("HOME").map(String::as_str) {
        Some(h) if h.starts_with('/') => Ok(h),
        Some(h) if !h.is_empty() => Err(format!("HOME={h:?} is not an absolute path")),
        _ => Err("HOME is not set".to_string()),
    }
}

/// The value of variable `name`, with the XDG defaults applied.
pub(crate) fn var(env: &EnvSnapshot, name: &str) -> Result<String, String> {
    if let Some((_, rel)) = XDG_DEFAULTS.iter().find(|(n, _)| *n == name) {
        return match env.get(name) {
            Some(v) if v.starts_with('/') => Ok(v.clone()),
            _ => Ok(format!("{}/{rel}", home(env)?)),
        };
    }
    env.get(name)
        .cloned()
        .ok_or_else(|| format!("undefined variable ${name}"))
}

/// Expands `~`, `$VAR`, `${VAR}` (and `$$` for a literal `$`) in `raw` and
/// requires the result to be an absolute path.
pub(crate) fn expand_path(raw: &str, env: &EnvSnapshot) -> Result<PathBuf, String> {
    let expanded = expand(raw, env)?;
    if expanded.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    if !expanded.starts_with('/') {
        return Err(format!(
            "{expanded:?} is not an absolute path (after expanding ~ and $VAR)"
        ));
    }
    Ok(PathBuf::from(expanded))
}

/// The string expansion behind [`expand_path`].
fn expand(raw: &str, env: &EnvSnapshot) -> Result<String, String> {
    let mut out = String::new();
    let rest = if raw == "~" || raw.starts_with("~/") {
        out.push_str(home(env).map_err(|e| format!("cannot expand ~: {e}"))?);
        &raw[1..]
    } else if raw.starts_with('~') {
        return Err("only ~ and ~/ are expanded, not ~user".into());
    } else {
        raw
    };
    let mut chars = rest.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        match chars.peek().map(|&(_, c)| c) {
            Some('$') => {
                chars.next();
                out.push('$');
            }
            Some('{') => {
                let start = i + 2;
                let Some(len) = rest[start..].find('}') else {
                    return Err("unterminated ${ in path".into());
                };
                let name = &rest[start..start + len];
                if !is_var_name(name) {
                    return Err(format!("invalid variable name ${{{name}}}"));
                }
                out.push_str(&var(env, name)?);
                while chars.next().is_some_and(|(j, _)| j < start + len) {}
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let start = i + 1;
                let len = rest[start..]
                    .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
                    .unwrap_or(rest.len() - start);
                out.push_str(&var(env, &rest[start..start + len])?);
                while chars.peek().is_some_and(|&(j, _)| j < start + len) {
                    chars.next();
                }
            }
            _ => out.push('$'),
        }
    }
    Ok(out)
}

fn is_var_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && cs.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> EnvSnapshot {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn tilde_and_variables() {
        let e = env(&[("HOME", "/home/u"), ("PROJ", "p1")]);
        assert_eq!(expand_path("~", &e).unwrap(), PathBuf::from("/home/u"));
        assert_eq!(
            expand_path("~/src/$PROJ/pl", &e).unwrap(),
            PathBuf::from("/home/u/src/p1/pl")
        );
        assert_eq!(
            expand_path("/x/${PROJ}_y/$$z", &e).unwrap(),
            PathBuf::from("/x/p1_y/$z")
        );
        assert_eq!(expand_path("/a$/b", &e).unwrap(), PathBuf::from("/a$/b"));
    }

    #[test]
    fn undefined_variable_is_named() {
        let e = env(&[("HOME", "/home/u")]);
        let err = expand_path("/x/$NOPE/y", &e).unwrap_err();
        assert!(err.contains("$NOPE"), "{err}");
        let err = expand_path("/x/${ALSO_NOPE}", &e).unwrap_err();
        assert!(err.contains("$ALSO_NOPE"), "{err}");
    }

    #[test]
    fn xdg_state_home_defaults_when_unset_or_empty() {
        let e = env(&[("HOME", "/home/u")]);
        assert_eq!(
            expand_path("$XDG_STATE_HOME/r", &e).unwrap(),
            PathBuf::from("/home/u/.local/state/r")
        );
        let e = env(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "")]);
        assert_eq!(
            expand_path("${XDG_STATE_HOME}/r", &e).unwrap(),
            PathBuf::from("/home/u/.local/state/r")
        );
        let e = env(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "/st")]);
        assert_eq!(
            expand_path("$XDG_STATE_HOME/r", &e).unwrap(),
            PathBuf::from("/st/r")
        );
    }

    #[test]
    fn relative_and_tilde_user_are_refused() {
        let e = env(&[("HOME", "/home/u")]);
        assert!(expand_path("pl", &e).unwrap_err().contains("absolute"));
        assert!(expand_path("~bob/x", &e).unwrap_err().contains("~user"));
        assert!(expand_path("~/x", &env(&[])).unwrap_err().contains("HOME"));
        assert!(expand_path("/x/${BAD", &e)
            .unwrap_err()
            .contains("unterminated"));
    }
}

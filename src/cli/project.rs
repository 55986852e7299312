//! Which project a command is about when the user did not say: `--config`
//! or `--project` (or `REVEILLE_PROJECT__NAME`) if given; else the only
//! configured project (`~/.config/reveille/*.toml`, which the
//! configuration itself falls back to); else, for a command about one
//! file (`why`, `ready`), the configured project whose plan directory — or
//! sessions directory, for a session checklist — holds it.

use std::path::{Path, PathBuf};

use reveille::config::{self, LoadOptions};

use super::args::ConfigFlags;

/// The options naming the project of a command about `file`: the flags
/// as given when they (or the only configured project) say which, else
/// the configured project that watches `file`; `None` when nothing tells.
pub fn for_file(flags: &ConfigFlags, file: &Path) -> Option<LoadOptions> {
    let configured = config::configured_projects(None);
    if chosen(flags) || configured.len() == 1 {
        return Some(options(flags));
    }
    let dir = canonical_parent(file)?;
    configured
        .into_iter()
        .map(|(name, _)| LoadOptions {
            project: Some(name),
            ..options(flags)
        })
        .find(|opts| holds(opts, &dir))
}

/// The options exactly as the flags say.
pub fn options(flags: &ConfigFlags) -> LoadOptions {
    LoadOptions {
        config: flags.config.clone(),
        project: flags.project.clone(),
        env: None,
    }
}

/// Whether the user named the project (flag, file or environment).
pub fn chosen(flags: &ConfigFlags) -> bool {
    flags.config.is_some()
        || flags.project.is_some()
        || std::env::var_os("REVEILLE_PROJECT__NAME").is_some()
}

/// When several projects are configured and none was chosen: a hint
/// naming them, for a command that then found nothing.
pub fn ambiguity(flags: &ConfigFlags) -> Option<String> {
    let configured = config::configured_projects(None);
    if chosen(flags) || configured.len() < 2 {
        return None;
    }
    let names: Vec<String> = configured.into_iter().map(|(n, _)| n).collect();
    Some(format!(
        "{} projects are configured ({}): choose one with --project",
        names.len(),
        names.join(", ")
    ))
}

/// Whether the project of `opts` watches files in `dir`: its plan
/// directory, or one session directory of its sessions root.
fn holds(opts: &LoadOptions, dir: &Path) -> bool {
    let (Some(loaded), _) = config::load_salvaged(opts) else {
        return false;
    };
    let s = &loaded.settings;
    same_dir(&s.project.plan_dir, dir)
        || dir.parent().is_some_and(|up| same_dir(up, &s.sessions.dir))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn canonical_parent(file: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(file).ok()?;
    std::fs::canonicalize(abs.parent()?).ok()
}

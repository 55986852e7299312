//! `reveille ready FILE` and `reveille why FILE [STEP]`: answers about one
//! file, computed offline.

use std::path::Path;

use anyhow::{anyhow, bail, Context};

use reveille::config::{self, Settings};
use reveille::core::beads;
use reveille::core::name::{classify, diagnose};
use reveille::core::plan::{parse_plan, Plan, PlanFormat};
use reveille::core::ready_report::{self, find_step, ReadyItem};
use reveille::shell::{status, why};

use super::args::ConfigFlags;
use super::output::{print, print_json, warn};
use super::project;

/// Plan files larger than this are refused here too (the daemon's own cap
/// is `project.max_plan_bytes`, 4 MiB by default).
const OFFLINE_CAP: usize = 64 << 20;

fn file_name(file: &Path) -> String {
    file.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads and parses a plan file, refusing one larger than `cap`. Says on
/// stderr when the daemon would ignore the file for its name; a file with
/// no steps is "not a plan".
fn read_plan(file: &Path, cap: usize) -> anyhow::Result<Plan> {
    let name = file_name(file);
    let format = match classify(&name) {
        Some(f) => f.format(),
        None => {
            let rule = diagnose(&name).map_or_else(
                || "it is neither <stamp>_<uid>--<slug>__<state>.md nor *.plan.json".to_string(),
                |r| r.to_string(),
            );
            warn(format!(
                "warning: the daemon ignores {} because of its name: {rule}",
                file.display()
            ));
            if name.ends_with(".json") {
                PlanFormat::Json
            } else {
                PlanFormat::Markdown
            }
        }
    };
    let bytes = std::fs::read(file).with_context(|| file.display().to_string())?;
    let plan = parse_plan(format, &bytes, cap).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    if plan.steps.is_empty() {
        let what = match format {
            PlanFormat::Markdown => "no checklist steps (`- [ ] title` lines)",
            PlanFormat::Json => "no tasks in its phases",
        };
        bail!("{}: not a plan: {what}", file.display());
    }
    Ok(plan)
}

/// The plan size the daemon of the project watching `file` accepts
/// (`project.max_plan_bytes`), so `ready` refuses what it would; with no
/// project to tell, [`OFFLINE_CAP`].
fn plan_cap(file: &Path, flags: &ConfigFlags) -> usize {
    project::for_file(flags, file)
        .and_then(|opts| config::load_salvaged(&opts).0)
        .and_then(|l| usize::try_from(l.settings.project.max_plan_bytes).ok())
        .unwrap_or(OFFLINE_CAP)
}

/// `reveille ready FILE [--json]`.
pub fn ready(file: &Path, flags: &ConfigFlags, json: bool) -> anyhow::Result<()> {
    let items = if file_name(file).ends_with(".jsonl") {
        ready_issues(file)?
    } else {
        ready_report::ready_steps(&read_plan(file, plan_cap(file, flags))?)
    };
    if json {
        print_json(&items)?;
    } else {
        print(&ready_report::ready_lines(&items))?;
    }
    Ok(())
}

/// The ready issues of a beads `issues.jsonl`: `bd ready`'s rule, offline.
fn ready_issues(file: &Path) -> anyhow::Result<Vec<ReadyItem>> {
    let bytes = std::fs::read(file).with_context(|| file.display().to_string())?;
    let text =
        std::str::from_utf8(&bytes).map_err(|e| anyhow!("{}: not UTF-8 ({e})", file.display()))?;
    let (issues, errors) = beads::parse_issues(text);
    for e in &errors {
        warn(format!("{}: {e}", file.display()));
    }
    let now = reveille::shell::wall::unix_s();
    let ready = beads::ready(&issues, now);
    Ok(ready_report::ready_issues(&issues, &ready))
}

/// What the daemon of the project watching `file` knows (the project as
/// `project::for_file` finds it), if it has a state directory;
/// configuration problems are said once and do not stop `why`.
fn daemon_knowledge(file: &Path, flags: &ConfigFlags) -> Option<(status::Known, Settings)> {
    let opts = project::for_file(flags, file).unwrap_or_else(|| project::options(flags));
    let (loaded, errors) = config::load_salvaged(&opts);
    for e in &errors {
        warn(e);
    }
    let settings = loaded?.settings;
    if !settings.state.dir.is_dir() {
        return None;
    }
    match status::known(&settings) {
        Ok(k) => Some((k, settings)),
        Err(e) => {
            warn(format!("cannot read the daemon's state: {e}"));
            None
        }
    }
}

/// `reveille why FILE [STEP] [--json]`.
pub fn why(file: &Path, step: Option<&str>, flags: &ConfigFlags, json: bool) -> anyhow::Result<()> {
    if file_name(file).ends_with(".jsonl") {
        bail!(
            "{}: why explains plan files; `reveille ready {}` lists the ready issues",
            file.display(),
            file.display()
        );
    }
    let known = daemon_knowledge(file, flags);
    let cap = known.as_ref().map_or(OFFLINE_CAP, |(_, s)| {
        usize::try_from(s.project.max_plan_bytes).unwrap_or(OFFLINE_CAP)
    });
    let plan = read_plan(file, cap)?;
    let only = match step {
        Some(s) => Some(
            find_step(&plan, s)
                .ok_or_else(|| anyhow!("{}: no step {s:?}", file.display()))?
                .num,
        ),
        None => None,
    };
    let daemon = known.as_ref().map(|(known, settings)| why::Daemon {
        known,
        running: status::running_pid(&settings.state.dir),
        outbox_cap: settings.sessions.outbox_cap,
        sessions: reveille::shell::session_view::read(&settings.state.dir),
    });
    let answer = why::answer(&plan, file, only, daemon.as_ref());
    if json {
        print_json(&answer)?;
    } else {
        print(&why::render(&answer))?;
    }
    Ok(())
}

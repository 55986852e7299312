//! `reveille status --watch` when standard output is not a terminal (a
//! pipe, a file, a log) or `--json` is given: no screen to redraw, so a
//! new snapshot is written each time what it shows changed — the text of
//! `reveille status` under a `--- <local time>` line, or, with `--json`,
//! one `status --json` object per line (JSON Lines). Times passing alone
//! write nothing; a daemon starting or stopping does. It ends, status 0,
//! on SIGINT, SIGTERM or SIGHUP, and quietly (141) when the reader goes.

use std::time::SystemTime;

use reveille::config::Settings;
use reveille::shell::status;

use super::clock::date_time;
use super::follow::{Follow, Next};
use super::layout::Shown;
use super::wakeups::Signals;
use crate::cli::output::print;

/// Write a snapshot at the start and after each change, until a signal.
pub fn run(settings: &Settings, json: bool) -> anyhow::Result<()> {
    let mut follow = Follow::new(settings, Signals::Stream, false)?;
    let mut last = String::new();
    loop {
        let shown = follow.shown();
        let key = serde_json::to_string(&as_json(&settings.project.name, shown))?;
        if key != last {
            match json {
                true => print(&format!("{key}\n"))?,
                false => print(&text(shown))?,
            }
            last = key;
        }
        if follow.next()? == Next::Quit {
            return Ok(());
        }
    }
}

/// The `status --json` object, or `{"project", "error"}` when the state
/// could not be read.
fn as_json(project: &str, shown: &Shown) -> serde_json::Value {
    match shown {
        Ok(s) => serde_json::to_value(s).unwrap_or_default(),
        Err(e) => serde_json::json!({ "project": project, "error": e }),
    }
}

fn text(shown: &Shown) -> String {
    let body = match shown {
        Ok(s) => status::render(s),
        Err(e) => format!("cannot read the state: {e}\n"),
    };
    format!("--- {}\n{body}", date_time(SystemTime::now()))
}

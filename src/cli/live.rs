//! `reveille status --watch`: the status kept on screen, redrawn as things
//! change — plans, ready and announced steps, each session's kind, state
//! and what it was last told, the outbox, reminders coming due — and
//! honest when no daemon runs. On a terminal it takes the whole screen
//! (`terminal`) and draws `layout`'s lines, woken by `follow` (inotify, a
//! signalfd, the keys, a once-a-second tick); elsewhere, or with `--json`,
//! it writes a snapshot per change (`stream`).

mod clock;
mod fit;
mod follow;
mod layout;
mod stream;
mod terminal;
mod wakeups;

use std::io::{self, IsTerminal};
use std::time::SystemTime;

use reveille::config::Settings;

use follow::{Follow, Next};
use terminal::Terminal;
use wakeups::Signals;

/// Follow the project of `settings` until `q`, Ctrl-C or a signal.
pub fn run(settings: &Settings, json: bool) -> anyhow::Result<()> {
    if json || !terminal::usable() {
        return stream::run(settings, json);
    }
    full_screen(settings)
}

fn full_screen(settings: &Settings) -> anyhow::Result<()> {
    // Signals are taken before the terminal is, so a Ctrl-C at any moment
    // finds the terminal restored by `Terminal`'s drop.
    let mut follow = Follow::new(settings, Signals::Terminal, io::stdin().is_terminal())?;
    let mut term = Terminal::take()?;
    let mut clean = true;
    loop {
        let now = SystemTime::now();
        let clock = clock::time_of_day(now);
        let shown = follow.shown();
        let size = term.size();
        let lines = layout::screen(&settings.project.name, shown, now, &clock, size);
        term.draw(&lines, size.cols, clean)?;
        clean = false;
        match follow.next()? {
            Next::Quit => return Ok(()),
            Next::Changed | Next::Tick => {}
            Next::Redraw => clean = true,
            Next::Suspend => {
                term.suspend()?;
                clean = true;
            }
            Next::Continued => {
                term.retake()?;
                clean = true;
            }
        }
    }
}

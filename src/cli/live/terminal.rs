//! The terminal, taken for the full-screen view and always given back.
//!
//! Taken: keys arrive one at a time and are not echoed (non-canonical, no
//! echo; Ctrl-C and Ctrl-Z still send their signals, which the view
//! handles), the alternate screen (what was on the terminal is there again
//! afterwards), no cursor, no autowrap (a line the width estimate gets
//! wrong is clipped, never wrapped). Given back — on `q`, a signal, an
//! error or a panic's unwinding (`Drop`), and around a Ctrl-Z suspension —
//! exactly the modes standard input had before.

use std::io::{self, IsTerminal, Write};

use nix::sys::signal::{kill, Signal};
use nix::sys::termios::{
    tcgetattr, tcsetattr, LocalFlags, SetArg, SpecialCharacterIndices, Termios,
};
use nix::unistd::getpid;

use super::fit::columns;
use super::layout::{Line, Size};

/// Alternate screen, cursor hidden, autowrap off.
const TAKE: &str = "\x1b[?1049h\x1b[?25l\x1b[?7l";
/// The reverse, in the reverse order.
const GIVE_BACK: &str = "\x1b[?7h\x1b[?25h\x1b[?1049l";

/// The size when the terminal does not say (the classic one).
const DEFAULT: Size = Size { cols: 80, rows: 24 };

/// Whether standard output is a terminal the view can draw on: a dumb
/// terminal (`TERM=dumb` or unset) knows no escape sequences.
pub fn usable() -> bool {
    let term = std::env::var("TERM").unwrap_or_default();
    io::stdout().is_terminal() && !term.is_empty() && term != "dumb"
}

/// The terminal while the view has it.
pub struct Terminal {
    /// Standard input's modes before, when it is a terminal.
    saved: Option<Termios>,
    /// Whether the terminal is taken now (not given back yet).
    taken: bool,
}

impl Terminal {
    /// Take the terminal.
    pub fn take() -> io::Result<Terminal> {
        let stdin = io::stdin();
        let saved = match stdin.is_terminal() {
            true => Some(tcgetattr(&stdin).map_err(io::Error::from)?),
            false => None,
        };
        let mut t = Terminal {
            saved,
            taken: false,
        };
        t.take_again()?;
        Ok(t)
    }

    fn take_again(&mut self) -> io::Result<()> {
        if let Some(saved) = &self.saved {
            let mut keys = saved.clone();
            keys.local_flags
                .remove(LocalFlags::ICANON | LocalFlags::ECHO);
            keys.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
            keys.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
            tcsetattr(io::stdin(), SetArg::TCSANOW, &keys).map_err(io::Error::from)?;
        }
        self.taken = true;
        write_all(TAKE)
    }

    /// Give the terminal back as it was (again: a no-op).
    pub fn give_back(&mut self) {
        if !self.taken {
            return;
        }
        self.taken = false;
        // Best effort: a terminal that went away cannot be restored.
        let _ = write_all(GIVE_BACK);
        if let Some(saved) = &self.saved {
            let _ = tcsetattr(io::stdin(), SetArg::TCSANOW, saved);
        }
    }

    /// Ctrl-Z: give the terminal back, stop until the shell continues
    /// this process (`fg`), then take it again.
    pub fn suspend(&mut self) -> io::Result<()> {
        self.give_back();
        // SIGSTOP cannot be caught or blocked: the process stops right here.
        kill(getpid(), Signal::SIGSTOP).map_err(io::Error::from)?;
        self.take_again()
    }

    /// After SIGCONT from someone else (a `kill -STOP`, `kill -CONT`): the
    /// shell may have reset the modes while it had the terminal.
    pub fn retake(&mut self) -> io::Result<()> {
        self.taken = false;
        self.take_again()
    }

    /// The terminal's size now.
    pub fn size(&self) -> Size {
        let mut ws: libc::winsize = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCGWINSZ fills in the `winsize` it is given a pointer to.
        let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
        match ok && ws.ws_col > 0 && ws.ws_row > 0 {
            true => Size {
                cols: usize::from(ws.ws_col),
                rows: usize::from(ws.ws_row),
            },
            false => DEFAULT,
        }
    }

    /// Draw `lines` from the top left, each cleared to its end, and clear
    /// below them, on a terminal `cols` wide; `clean` clears the whole
    /// screen first (after a resize, whose reflow leaves debris).
    pub fn draw(&mut self, lines: &[Line], cols: usize, clean: bool) -> io::Result<()> {
        let mut out = String::with_capacity(4096);
        if clean {
            out.push_str("\x1b[2J");
        }
        out.push_str("\x1b[H");
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                out.push_str("\r\n");
            }
            match (line.alert, line.strong) {
                (true, _) => out.push_str(&format!("\x1b[1;7m{}\x1b[0m", line.text)),
                (false, true) => out.push_str(&format!("\x1b[1m{}\x1b[0m", line.text)),
                (false, false) => out.push_str(&line.text),
            }
            // Without autowrap the cursor stays on the last column once it
            // is written, and clearing to the end of the line would erase
            // that column's character: a full line needs no clearing.
            if line.text.chars().map(columns).sum::<usize>() < cols {
                out.push_str("\x1b[K");
            }
        }
        out.push_str("\x1b[J");
        write_all(&out)
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// One write of `text` to standard output, flushed.
fn write_all(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

//! A real desktop notification service for the tests: a private D-Bus
//! session bus (`dbus-daemon --session`), an X server with no screen
//! (`Xvfb`) and the notification daemon `dunst` on both, so a notification
//! reveille sends reaches the program a person's desktop would run, and the
//! test reads what it shows through `dunstctl`.
//!
//! Each test gets its own bus socket and display (chosen by Xvfb itself,
//! `-displayfd`); everything is stopped by process id on drop. Where one
//! of the programs is missing the test says so in one line and returns
//! (CI installs them: dbus, xvfb, dunst).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::try_wait_until;

/// The programs this needs, each on PATH.
const PROGRAMS: [&str; 4] = ["dbus-daemon", "Xvfb", "dunst", "dunstctl"];

pub struct NotificationServer {
    /// `unix:path=…` of the private session bus.
    pub bus: String,
    children: Vec<Child>,
    _dir: tempfile::TempDir,
}

/// One notification as the server's history shows it (closed ones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub app: String,
    pub summary: String,
    pub body: String,
}

impl NotificationServer {
    /// Starts the bus, the display and dunst, or says why it cannot and
    /// returns `None`.
    pub fn start_or_skip() -> Option<NotificationServer> {
        if let Some(missing) = PROGRAMS.iter().find(|p| !on_path(p)) {
            eprintln!("skipped: {missing} is not installed (apt-get install dbus xvfb dunst)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let bus_path: PathBuf = dir.path().join("bus");
        let bus = format!("unix:path={}", bus_path.display());
        let mut children = Vec::new();
        children.push(
            Command::new("dbus-daemon")
                .args(["--session", "--nofork", "--nosyslog", "--address"])
                .arg(&bus)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("dbus-daemon"),
        );
        let mut xvfb = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-nolisten",
                "tcp",
                "-screen",
                "0",
                "640x480x24",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb");
        // Xvfb writes the display number it took once it listens.
        let mut line = String::new();
        BufReader::new(xvfb.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        children.push(xvfb);
        let display = format!(":{}", line.trim());
        let mut server = NotificationServer {
            bus,
            children,
            _dir: dir,
        };
        assert!(
            line.trim().parse::<u32>().is_ok(),
            "Xvfb gave no display: {line:?}"
        );
        server.children.push(
            Command::new("dunst")
                .env("DISPLAY", &display)
                .env("DBUS_SESSION_BUS_ADDRESS", &server.bus)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("dunst"),
        );
        let up = try_wait_until(Duration::from_secs(10), || {
            server.ctl(&["count", "displayed"]).map(|_| ())
        });
        assert!(up.is_some(), "dunst did not take the notification service");
        Some(server)
    }

    /// `dunstctl ARGS` on this bus, its output when it succeeded.
    fn ctl(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("dunstctl")
            .args(args)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// How many notifications are on the screen now.
    pub fn displayed(&self) -> usize {
        self.ctl(&["count", "displayed"])
            .and_then(|s| s.trim().parse().ok())
            .expect("dunstctl count displayed")
    }

    /// The notifications closed so far, newest first.
    pub fn history(&self) -> Vec<Shown> {
        let text = self.ctl(&["history"]).expect("dunstctl history");
        let json: serde_json::Value = serde_json::from_str(&text).expect("history is JSON");
        let field =
            |n: &serde_json::Value, k: &str| n[k]["data"].as_str().unwrap_or_default().to_string();
        json["data"][0]
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|n| Shown {
                        app: field(n, "appname"),
                        summary: field(n, "summary"),
                        body: field(n, "body"),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for NotificationServer {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

//! `reveille demo`: a wake-up in a minute on a fresh machine. It makes a
//! throw-away project (a plan directory, one session whose enqueue file is
//! a named pipe, and a reader on it that prints what arrives), runs the
//! real daemon on it, writes a plan and ticks it step by step the way an
//! agent would, shows each wake-up, then stops the daemon and cleans up.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::output::print;

/// How long any one step of the demo may take before it gives up.
const PATIENCE: Duration = Duration::from_secs(10);

const SESSION: &str = "demo";

const PLAN: &str = "\
# Try reveille

- [ ] Write the plan
- [ ] Build it (after: 1)
- [ ] Test it (after: 1)
- [ ] Ship it (after: 2, 3)
";

/// The throw-away project, removed on drop unless kept.
struct Scratch {
    root: PathBuf,
    keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

/// The daemon child, stopped (SIGTERM, then SIGKILL) on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn say(text: &str) -> anyhow::Result<()> {
    print(text)?;
    Ok(())
}

/// `reveille demo [--keep]`.
pub fn run(keep: bool) -> anyhow::Result<()> {
    let root = std::env::temp_dir().join(format!("reveille-demo-{}", std::process::id()));
    fs::create_dir_all(root.join("pl")).context("cannot create the demo directory")?;
    let scratch = Scratch { root, keep };
    let root = &scratch.root;
    let fifo = make_session(root)?;
    let config = write_config(root)?;
    say(&format!(
        "reveille demo: a throw-away project in {}\n  plans go to    {}/pl\n  session {SESSION:?}  {} (a named pipe; a reader prints what arrives)\n",
        root.display(),
        root.display(),
        fifo.display()
    ))?;
    let prompts = read_prompts(&fifo)?;
    let log = root.join("daemon.log");
    let daemon = start_daemon(&config, &log)?;
    say(&format!(
        "  daemon         pid {} (its log: {})\n\n",
        daemon.0.id(),
        log.display()
    ))?;
    walk_through(&root.join("pl"), &prompts, &log)?;
    drop(daemon);
    let end = if keep {
        format!("\nkept {}\n", root.display())
    } else {
        format!("\nstopped the daemon and removed {}\n", root.display())
    };
    say(&end)?;
    say("Next: reveille --help, and the README's \"Running as a systemd user service\".\n")
}

fn make_session(root: &Path) -> anyhow::Result<PathBuf> {
    let dir = root.join("s").join(SESSION);
    fs::create_dir_all(&dir)?;
    let fifo = dir.join("fifo.in");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
        .with_context(|| format!("mkfifo {}", fifo.display()))?;
    Ok(fifo)
}

fn write_config(root: &Path) -> anyhow::Result<PathBuf> {
    let q = |p: PathBuf| serde_json::to_string(&p.display().to_string()).unwrap_or_default();
    let text = format!(
        "[project]\nname = \"demo\"\nplan_dir = {}\ndefault_session = \"{SESSION}\"\n\n[sessions]\ndir = {}\nsession_plans = false\n\n[events]\npath = \"\"\n\n[state]\ndir = {}\n\n[log]\ntarget = \"stderr\"\nlevel = \"info\"\n",
        q(root.join("pl")),
        q(root.join("s")),
        q(root.join("state")),
    );
    let path = root.join("reveille.toml");
    fs::write(&path, text)?;
    Ok(path)
}

/// The reader: NUL-terminated prompts (the framing on a named pipe), sent
/// over a channel. Opened read-write so it never sees end-of-file between
/// the daemon's writes, and so the open does not wait for a writer.
fn read_prompts(fifo: &Path) -> anyhow::Result<mpsc::Receiver<String>> {
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(fifo)?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n) = file.read(&mut chunk) {
            buf.extend_from_slice(&chunk[..n]);
            while let Some(end) = buf.iter().position(|&b| b == 0) {
                let prompt = String::from_utf8_lossy(&buf[..end]).into_owned();
                buf.drain(..=end);
                if tx.send(prompt).is_err() {
                    return;
                }
            }
        }
    });
    Ok(rx)
}

fn start_daemon(config: &Path, log: &Path) -> anyhow::Result<Running> {
    let exe = std::env::current_exe().context("cannot find the reveille binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("run")
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(log)?);
    // The demo's own configuration, whatever the caller's environment says.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("REVEILLE_") || key == "JOURNAL_STREAM" || key == "RUST_LOG" {
            cmd.env_remove(key.as_ref());
        }
    }
    let daemon = Running(cmd.spawn().context("cannot start the daemon")?);
    // A plan written before the start-up scan would be the baseline (not
    // a wake-up), so wait for the daemon to say it is ready.
    let deadline = Instant::now() + PATIENCE;
    while !fs::read_to_string(log)
        .unwrap_or_default()
        .contains("ready:")
    {
        if Instant::now() > deadline {
            bail!(
                "the daemon did not start; its log:\n{}",
                fs::read_to_string(log)?
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(daemon)
}

/// Waits for `n` prompts and prints them.
fn show(prompts: &mpsc::Receiver<String>, n: usize, log: &Path) -> anyhow::Result<()> {
    for _ in 0..n {
        let Ok(prompt) = prompts.recv_timeout(PATIENCE) else {
            bail!(
                "no wake-up arrived; the daemon's log:\n{}",
                fs::read_to_string(log)?
            );
        };
        let mut text = format!("   woke session {SESSION}:\n");
        for line in prompt.lines() {
            text.push_str(&format!("   | {line}\n"));
        }
        say(&text)?;
    }
    Ok(())
}

/// Rewrites the plan with step `title` checked, in place, as
/// `task_complete` does.
fn tick(plan: &Path, title: &str) -> anyhow::Result<()> {
    let text = fs::read_to_string(plan)?;
    let ticked = text.replacen(&format!("- [ ] {title}"), &format!("- [x] {title}"), 1);
    fs::write(plan, ticked)?;
    Ok(())
}

fn walk_through(dir: &Path, prompts: &mpsc::Receiver<String>, log: &Path) -> anyhow::Result<()> {
    let name = format!(
        "20260101T090000_{:08x}--try-reveille__wip.md",
        std::process::id()
    );
    let plan = dir.join(&name);
    fs::write(&plan, PLAN)?;
    say(&format!(
        "1. an agent writes pl/{name}:\n{}\n   s1 waits for nothing, so it is ready at once:\n",
        PLAN.lines()
            .map(|l| format!("   : {l}\n"))
            .collect::<String>()
    ))?;
    show(prompts, 1, log)?;
    say(
        "\n2. the agent ticks s1 (\"- [x] Write the plan\"): s2 and s3 were waiting only for it\n",
    )?;
    tick(&plan, "Write the plan")?;
    show(prompts, 2, log)?;
    say("\n3. it ticks s2 and then s3: s4 waited for both\n")?;
    tick(&plan, "Build it")?;
    tick(&plan, "Test it")?;
    show(prompts, 1, log)?;
    say("\n4. it ticks s4: every step of a __wip plan is checked\n")?;
    tick(&plan, "Ship it")?;
    show(prompts, 1, log)?;
    let done = dir.join(name.replace("__wip.md", "__done.md"));
    fs::rename(&plan, &done)?;
    say("\n5. it renames the plan to __done: done plans wake no one\n")
}

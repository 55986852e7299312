//! What a new user installing reveille meets, checked as they would meet
//! it: the licence files Cargo.toml names, a locked install, `man
//! reveille` finding the page after the README's steps (with its
//! configuration reference), and `NO_COLOR` in a terminal.

use crate::util::daemon::{bin, command, WAIT};
use crate::util::project::Project;
use crate::util::try_wait_until;
use std::fs::{self, File};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn the_licences_cargo_toml_names_are_there() {
    let manifest = fs::read_to_string(repo("Cargo.toml")).unwrap();
    let license = manifest
        .lines()
        .find_map(|l| l.strip_prefix("license = "))
        .expect("a license in Cargo.toml");
    assert_eq!(license, "\"MIT OR Apache-2.0\"");
    let mit = fs::read_to_string(repo("LICENSE-MIT")).unwrap();
    assert!(
        mit.contains("Permission is hereby granted, free of charge"),
        "{mit}"
    );
    let apache = fs::read_to_string(repo("LICENSE-APACHE")).unwrap();
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    assert!(apache.contains("END OF TERMS AND CONDITIONS"));
}

#[test]
fn every_install_line_is_locked() {
    for doc in ["README.md", "doc/SYSTEMD.md", "systemd/reveille@.service"] {
        let text = fs::read_to_string(repo(doc)).unwrap();
        let installs: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("cargo install"))
            .collect();
        assert!(!installs.is_empty(), "{doc} says how to install");
        for l in installs {
            assert!(l.contains("cargo install --locked --path ."), "{doc}: {l}");
        }
    }
}

/// The README's install lines that place the man page, as written.
fn man_install_lines() -> Vec<String> {
    let readme = fs::read_to_string(repo("README.md")).unwrap();
    let section = &readme[readme.find("### Install and enable").unwrap()..];
    let block = &section[..section.find("```\n\n").unwrap()];
    block
        .lines()
        .filter(|l| l.starts_with("mkdir -p") || l.starts_with("reveille man >"))
        .map(|l| l.split('#').next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn man_finds_the_page_after_the_readme_steps_and_it_has_every_key() {
    if Command::new("man").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "man-db is needed in CI");
        eprintln!("SKIPPED: no man(1) here");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    // `cargo install` put the binary here; the README's PATH has it.
    fs::create_dir_all(h.join(".cargo/bin")).unwrap();
    fs::copy(bin(), h.join(".cargo/bin/reveille")).unwrap();
    let path = format!("{}:/usr/bin:/bin", h.join(".cargo/bin").display());
    let lines = man_install_lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let user = |program: &str| {
        let mut c = Command::new(program);
        c.env_clear()
            .env("HOME", h)
            .env("PATH", &path)
            .env("LANG", "C.UTF-8");
        c
    };
    for line in &lines {
        let out = user("sh").args(["-c", line]).output().unwrap();
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let found = user("man").args(["-w", "reveille"]).output().unwrap();
    let where_ = String::from_utf8_lossy(&found.stdout).trim().to_string();
    assert!(
        found.status.success(),
        "man -w reveille: {}",
        String::from_utf8_lossy(&found.stderr)
    );
    assert!(where_.starts_with(&h.display().to_string()), "{where_}");

    let page = user("man")
        .args(["-P", "cat", "reveille"])
        .env("MANWIDTH", "300")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&page.stdout).replace('\u{2010}', "-");
    assert!(text.contains("CONFIGURATION"), "{text}");
    for k in reveille::config::reference() {
        let key = k.key.rsplit('.').next().unwrap();
        assert!(
            text.contains(&format!("{key} = {}", k.default)),
            "{} not in the page",
            k.key
        );
        assert!(text.contains(&k.env), "{} not in the page", k.env);
    }
}

/// troff lays the page out without a warning at a terminal's width (it
/// said "cannot adjust line" at the plan file name pattern in EXTRA).
#[test]
fn the_man_page_renders_without_troff_warnings() {
    if Command::new("man").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "man-db is needed in CI");
        eprintln!("SKIPPED: no man(1) here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("reveille.1");
    let out = Command::new(bin()).arg("man").output().unwrap();
    fs::write(&page, &out.stdout).unwrap();
    for width in ["80", "120"] {
        let shown = Command::new("man")
            .args(["--warnings", "-P", "cat", "-l"])
            .arg(&page)
            .env("MANWIDTH", width)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&shown.stderr);
        assert!(shown.status.success(), "man -l: {said}");
        assert!(said.trim().is_empty(), "at width {width}: {said}");
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(text.contains("<plan_dir>/YYYYMMDDTHHMMSS_<uid>"), "{text}");
    }
}

/// A pseudo-terminal: (the master, to read; the slave, for the child).
fn pty() -> (File, File) {
    // SAFETY: plain libc calls on a descriptor this function owns; the
    // buffer is large enough for a pty path and NUL-terminated on success.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0, "posix_openpt");
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
        let slave = std::ffi::CStr::from_ptr(name.as_ptr())
            .to_str()
            .unwrap()
            .to_string();
        let master = File::from_raw_fd(master);
        let slave = File::options().read(true).write(true).open(slave).unwrap();
        (master, slave)
    }
}

/// What `reveille run` writes to a terminal until it is ready.
fn on_a_terminal(p: &Project, no_color: Option<&str>) -> String {
    let (mut master, slave) = pty();
    let mut cmd = command();
    cmd.args(["run", "--config"])
        .arg(&p.config)
        .stdout(Stdio::null())
        .stderr(slave);
    cmd.env_remove("NO_COLOR");
    if let Some(v) = no_color {
        cmd.env("NO_COLOR", v);
    }
    let mut child = cmd.spawn().unwrap();
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(master.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let mut seen = Vec::new();
    let ready = try_wait_until(WAIT, || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = master.read(&mut buf) {
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen)
            .contains("ready:")
            .then_some(())
    });
    let _ = child.kill();
    let _ = child.wait();
    let seen = String::from_utf8_lossy(&seen).into_owned();
    assert!(ready.is_some(), "not ready: {seen:?}");
    seen
}

#[test]
fn no_color_turns_the_terminal_log_plain() {
    let p = Project::new();
    let coloured = on_a_terminal(&p, None);
    assert!(
        coloured.contains("\u{1b}["),
        "a terminal gets colour: {coloured:?}"
    );
    let plain = on_a_terminal(&p, Some("1"));
    assert!(!plain.contains('\u{1b}'), "NO_COLOR=1: {plain:?}");
    // An empty NO_COLOR is not set (no-color.org).
    assert!(on_a_terminal(&p, Some("")).contains("\u{1b}["));
}

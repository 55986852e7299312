//! `reveille demo`: the README's first wake-up, on nothing but the binary.

use std::process::Stdio;

use super::{run_into, stderr, stdout};
use crate::util::daemon::command;

#[test]
fn the_demo_shows_each_wake_up_in_order_and_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = command();
    cmd.arg("demo").env("TMPDIR", tmp.path());
    let out = run_into(cmd, Stdio::piped());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.matches("woke session demo:").count(), 5, "{text}");
    let order = [
        "is ready: Write the plan",
        "is ready: Build it",
        "is ready: Test it",
        "is ready: Ship it",
        "Every step of \"Try reveille\" is checked",
    ];
    let mut at = 0;
    for needle in order {
        let found = text[at..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not after byte {at}:\n{text}"));
        at += found + needle.len();
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "the demo left {left:?}");

    let mut cmd = command();
    cmd.args(["demo", "--keep"]).env("TMPDIR", tmp.path());
    let out = run_into(cmd, Stdio::piped());
    assert!(out.status.success(), "{}", stderr(&out));
    let kept: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1);
    assert!(kept[0].path().join("state").is_dir());
    assert!(stdout(&out).contains(&format!("kept {}", kept[0].path().display())));
}

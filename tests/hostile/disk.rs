//! A full disk under the state directory: a 64 KiB tmpfs, filled. The
//! daemon keeps delivering from memory, says once that state cannot be
//! persisted, and says so again when space is back.

use std::fs;
use std::io::Write;
use std::process::Command;

use super::world::{World, GOOD, WAIT};
use crate::util::plans::{fresh_uid, plan_name};

/// Unmounts on drop, so a failing test leaves no mount behind.
struct Tmpfs(std::path::PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fill the filesystem holding `dir` with one file; returns it.
fn fill(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("filler");
    let mut f = fs::File::create(&path).unwrap();
    let block = [0u8; 512];
    loop {
        match f.write(&block) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    // Then byte by byte, so not even a partial page is left.
    while let Ok(1) = f.write(&[0]) {}
    path
}

fn plan(w: &mut World, title: &str) {
    w.write_plan(
        &plan_name(fresh_uid(), "disk"),
        format!("# Disk\n<!-- session: {GOOD} -->\n\n- [ ] {title}\n- [ ] then {title}\n"),
    );
}

#[test]
fn a_full_state_disk_never_stops_delivery_and_is_reported_once() {
    let mut w = World::new();
    fs::create_dir(&w.state_dir).unwrap();
    let st = w.state_dir.display().to_string();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", &st])
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("SKIPPED: mount -t tmpfs is not permitted here (needs root / CAP_SYS_ADMIN)");
        return;
    }
    let _mount = Tmpfs(w.state_dir.clone());
    let good = w.fifo_session(GOOD);
    let d = w.start();
    plan(&mut w, "before the disk filled");
    good.wait_for("ready: before the disk filled", WAIT);
    let filler = fill(&w.state_dir);
    // Full: each wake-up is still delivered, from memory. The journal's
    // last page may still hold a few records; keep going until it is full.
    let mut i = 0;
    while d.log_count("cannot record state") == 0 {
        assert!(i < 100, "100 plans and no report:\n{}", d.log());
        let title = format!("while full {i}");
        plan(&mut w, &title);
        good.wait_for(&format!("ready: {title}\n"), WAIT);
        i += 1;
    }
    for j in i..i + 5 {
        let title = format!("while full {j}");
        plan(&mut w, &title);
        good.wait_for(&format!("ready: {title}\n"), WAIT);
    }
    let line = d.wait_log("cannot record state", WAIT);
    assert!(
        line.contains("ERROR") && line.contains("No space left on device"),
        "{line}"
    );
    assert_eq!(d.log_count("cannot record state"), 1, "{}", d.log());
    assert_eq!(
        d.log_count("cannot write the state snapshot"),
        0,
        "{}",
        d.log()
    );
    // Space comes back: the next record says so, once.
    fs::remove_file(&filler).unwrap();
    plan(&mut w, "after space came back");
    good.wait_for("ready: after space came back", WAIT);
    d.wait_log("state directory writable again", WAIT);
    w.assert_alive(&good);
    assert_eq!(d.log_count("cannot record state"), 1, "{}", d.log());
    assert_eq!(d.log_count("writable again"), 1, "{}", d.log());
    // A clean stop persists everything; a restart loses nothing and
    // repeats nothing: no step is announced again.
    let before = good.texts().len();
    assert!(d.term().success());
    // The session's reader stays open across the restart (it reads as
    // soon as anything arrives): whatever the new daemon sends it, it has.
    let d = w.start();
    w.assert_alive(&good);
    let again: Vec<String> = good
        .texts()
        .into_iter()
        .skip(before)
        .filter(|p| !p.contains("alive check"))
        .collect();
    assert!(
        again.is_empty(),
        "repeated after restart: {again:#?}\n{}",
        d.log()
    );
    assert!(!d.log().contains("could not be read"), "{}", d.log());
    d.assert_running();
    drop(d);
    w.assert_contained();
}

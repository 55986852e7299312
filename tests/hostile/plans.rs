//! Plan files that are not plans: binary, invalid UTF-8, over the size cap,
//! one 100 MB line, rewritten while the daemon reads them, and a FIFO or a
//! directory named like a plan.

use std::fs;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::world::{World, GOOD, WAIT};
use crate::util::fifo::mkfifo;
use crate::util::plans::{fresh_uid, plan_name};

#[test]
fn binary_invalid_utf8_and_oversized_plans_are_one_error_each() {
    let mut w = World::new();
    w.set("project", "max_plan_bytes", "4096");
    w.set("project", "default_session", &format!("{GOOD:?}"));
    let good = w.fifo_session(GOOD);
    let d = w.start();
    let binary = plan_name(fresh_uid(), "binary");
    let latin1 = plan_name(fresh_uid(), "latin1");
    let huge = plan_name(fresh_uid(), "huge");
    let json = "binary.plan.json".to_string();
    let mut elf = b"\x7fELF\x02\x01\x01\0\0\0".to_vec();
    elf.extend((0..=255u8).cycle().take(2048));
    w.write_plan(&binary, &elf);
    w.write_plan(&latin1, b"# Caf\xe9\n\n- [ ] cr\xe8me\n");
    let mut big = String::from("# Huge\n\n");
    while big.len() < 1 << 20 {
        big.push_str("- [ ] a step that is one of very many\n");
    }
    // Renamed into place whole: a settle read of a half-written copy could
    // be under the cap (see the rewritten-mid-read test).
    let tmp = w.plan_dir.join("huge.tmp");
    fs::write(&tmp, &big).unwrap();
    fs::rename(&tmp, w.plan_dir.join(&huge)).unwrap();
    w.made(&w.plan_dir.join(&huge));
    w.write_plan(&json, b"{\"title\": \"x\0\"}");
    // The file's own size, not the cap + 1 bytes the daemon read of it.
    let over_cap = format!(
        "plan file is {} bytes, over the cap of 4096 bytes (project.max_plan_bytes)",
        big.len()
    );
    let cases = [
        (
            &binary,
            "binary content, not a plan: NUL byte at byte offset 7",
        ),
        (&latin1, "line 1: not valid UTF-8"),
        (&huge, &over_cap),
        (&json, "binary content"),
    ];
    for (file, what) in cases {
        let line = d.wait_log(file, WAIT);
        assert!(line.contains("ERROR") && line.contains(what), "{line}");
    }
    // Rewritten with the same garbage: not said again.
    w.write_plan(&binary, &elf);
    w.write_plan(&latin1, b"# Caf\xe9\n\n- [ ] cr\xe8me\n");
    w.assert_alive(&good);
    for (file, _) in cases {
        assert_eq!(d.log_count(file), 1, "{:#?}", d.lines_with(file));
    }
    assert_eq!(d.log_count(": announced "), 1, "{}", d.log());
    // Fixed: valid again, and its step wakes the session.
    w.write_plan(&latin1, "# Café\n\n- [ ] crème\n");
    good.wait_for("crème", WAIT);
    d.wait_log(" is valid again", WAIT);
    d.assert_running();
    w.assert_contained();
}

#[test]
fn a_single_100_mb_line_is_refused_without_reading_it_all() {
    let mut w = World::new();
    let good = w.fifo_session(GOOD);
    let d = w.start();
    let name = plan_name(fresh_uid(), "one-line");
    let path = w.plan_dir.join(&name);
    {
        let mut f = fs::File::create(&path).unwrap();
        let chunk = vec![b'x'; 1 << 20];
        f.write_all(b"# ").unwrap();
        for _ in 0..100 {
            f.write_all(&chunk).unwrap();
        }
    }
    w.made(&path);
    // (On a loaded machine the daemon may read the file while it is still
    // being written, under the cap, and say once that it has no steps.)
    let refused = format!("{name}: plan file is 104857602 bytes, over the cap");
    let line = d.wait_log(&refused, WAIT);
    // The daemon reads at most cap + 1 bytes, and says the file's size.
    assert!(line.contains("over the cap of 4194304 bytes"), "{line}");
    w.assert_alive(&good);
    assert_eq!(d.log_count(&refused), 1, "{}", d.log());
    d.assert_running();
    w.assert_contained();
}

#[test]
fn a_fifo_and_a_directory_named_like_plans_do_not_hang_the_daemon() {
    let mut w = World::new();
    let good = w.fifo_session(GOOD);
    let d = w.start();
    let fifo = w.plan_dir.join(plan_name(fresh_uid(), "fifo"));
    mkfifo(&fifo);
    w.made(&fifo);
    let dir = w.plan_dir.join(plan_name(fresh_uid(), "dir"));
    fs::create_dir(&dir).unwrap();
    w.made(&dir);
    let jdir = w.plan_dir.join("d.plan.json");
    fs::create_dir(&jdir).unwrap();
    w.made(&jdir);
    // Open and close the FIFO for writing: inotify reports a close-write.
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || {
            let mut r = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&fifo)
                .unwrap();
            r.write_all(b"# not a plan\n").unwrap();
        }
    });
    writer.join().unwrap();
    w.assert_alive(&good);
    // A restart lists the plan dir and must skip both, too.
    let log = d.log();
    assert!(!log.contains("panicked"), "{log}");
    d.term();
    let d = w.start();
    w.assert_alive(&good);
    d.assert_running();
    w.assert_contained();
}

/// A writer rewrites one plan (truncate, then write in small pieces) as
/// fast as it can while the daemon reads it. Every version it writes has
/// the same ready set, so any other announced title came from a partial
/// read: "a parse of a half-written file must never produce a wake-up that
/// the finished file would not" (SPEC §8.3).
/// (Regression: a read on close-write could see the next rewrite half done,
/// announce a partial title, and forget then re-announce vanished steps.)
#[test]
fn a_plan_rewritten_mid_read_announces_only_what_the_finished_file_would() {
    let mut w = World::new();
    let good = w.fifo_session(GOOD);
    let d = w.start();
    let name = plan_name(fresh_uid(), "racing");
    let text = "# Racing\n<!-- session: good -->\n\n\
        - [x] first step is done\n\
        - [ ] second step title is long (after: 1)\n\
        - [ ] third step waits for the second\n\
        - [ ] fourth step has a description\n  after: 3\n";
    let path = w.write_plan(&name, text);
    good.wait_for("second step title is long", WAIT);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = std::thread::spawn({
        let (path, stop) = (path.clone(), stop.clone());
        move || {
            let mut rounds = 0u32;
            let cuts = [
                "- [ ] second step",
                "- [ ] third step",
                "- [ ] fourth step has a de",
                "  after",
                "\n- [ ] fourth",
            ];
            while !stop.load(Ordering::Relaxed) {
                let mut f = fs::File::create(&path).unwrap();
                let mut rest = text;
                let cut = cuts[rounds as usize % cuts.len()];
                let at = rest.find(cut).unwrap() + cut.len();
                let (a, b) = rest.split_at(at);
                f.write_all(a.as_bytes()).unwrap();
                rest = b;
                f.write_all(rest.as_bytes()).unwrap();
                drop(f);
                rounds += 1;
            }
            rounds
        }
    });
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        assert!(!d.exited(), "{}", d.log());
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = writer.join().unwrap();
    w.assert_alive(&good);
    let announced: Vec<String> = good
        .texts()
        .into_iter()
        .filter(|p| p.contains("\"Racing\""))
        .collect();
    eprintln!("{rounds} rewrites, {} prompts", announced.len());
    assert!(rounds > 100, "only {rounds} rewrites");
    let mut distinct: std::collections::BTreeMap<&str, usize> = Default::default();
    for p in &announced {
        *distinct
            .entry(p.lines().next().unwrap_or_default())
            .or_default() += 1;
    }
    eprintln!("announced: {distinct:#?}");
    for p in &announced {
        assert!(
            p.contains("is ready: second step title is long\n"),
            "a partial read announced:\n{p}\nlog:\n{}",
            d.log()
        );
    }
    assert_eq!(announced.len(), 1, "{announced:#?}");
    d.assert_running();
    w.assert_contained();
}

//! The wake benchmark: the real daemon against temp directories and real
//! FIFOs, each figure beside its baseline, measured in the same run.
//!
//! ```text
//! cargo bench --bench wake -- --size full      # the figures of doc/PERFORMANCE.md
//! cargo bench --bench wake -- --size quick     # about a minute
//! cargo bench --bench wake -- --only latency,events
//! ```
//!
//! `--out FILE` also writes the markdown table to FILE. `REVEILLE_KEEP_TMP=1`
//! keeps the temp directories. Needs `inotify-tools` (the DIY baseline) and
//! `jq` (the events baseline); without them those baselines are skipped.

mod harness;

use std::path::PathBuf;

fn main() {
    let mut size = harness::Size::Quick;
    let mut only = Vec::new();
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--size" => {
                let v = args.next().unwrap_or_default();
                size = harness::Size::parse(&v).unwrap_or_else(|| {
                    eprintln!("--size takes smoke, quick or full, not {v:?}");
                    std::process::exit(2)
                });
            }
            "--only" => {
                only = args
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .map(str::to_string)
                    .collect();
                for o in &only {
                    if !harness::PARTS.contains(&o.as_str()) {
                        eprintln!(
                            "--only takes {} (comma-separated), not {o:?}",
                            harness::PARTS.join(",")
                        );
                        std::process::exit(2);
                    }
                }
            }
            "--out" => out = args.next().map(PathBuf::from),
            // cargo bench passes --bench; filters are not supported.
            "--bench" => {}
            other => {
                eprintln!("unknown argument {other:?}; see benches/wake/main.rs");
                std::process::exit(2);
            }
        }
    }
    let env = harness::Env {
        daemon: PathBuf::from(env!("CARGO_BIN_EXE_reveille")),
        diy_script: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/diy-waker.sh"),
        python_script: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/python-waker.py"),
        keep: std::env::var_os("REVEILLE_KEEP_TMP").is_some(),
    };
    eprintln!("daemon: {}", env.daemon.display());
    let report = harness::run(&env, size, &only);
    let md = report.markdown();
    println!("{md}");
    if let Some(out) = out {
        std::fs::write(&out, &md).expect("write --out");
    }
}

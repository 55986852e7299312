//! The wake benchmark's results: the table's rows, the report of a run
//! and how it prints, the machine it ran on, and the small formatting
//! helpers the figures share (kept apart from the runs that measure them).

use std::fmt::Write as _;
use std::time::Duration;

use super::scale;

/// Nearest-rank percentile.
pub fn percentile(v: &[Duration], p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let mut s = v.to_vec();
    s.sort();
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

pub(super) fn max(v: &[Duration]) -> Duration {
    v.iter().copied().max().unwrap_or_default()
}

/// One line of the results table.
#[derive(Debug, Clone)]
pub struct Row {
    pub figure: String,
    pub reveille: String,
    pub baseline: String,
    pub ratio: String,
    pub target: String,
    /// `None`: no target for this figure (or not measured at target size).
    pub pass: Option<bool>,
}

/// Everything a run produced.
#[derive(Debug, Default)]
pub struct Report {
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
    /// The raw figures (scale runs), for the growth table.
    pub scale: Vec<scale::ScaleRun>,
    pub machine: String,
    pub elapsed: Duration,
}

pub(super) fn us(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

pub(super) fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

pub(super) fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

pub(super) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `nproc`, CPU model, kernel, load.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "nproc {cpus}, {model}, Linux {}, load average {}",
        kernel.trim(),
        loadavg()
    )
}

impl Report {
    pub(super) fn row(
        &mut self,
        figure: &str,
        reveille: String,
        baseline: &str,
        ratio: &str,
        target: &str,
        pass: Option<bool>,
    ) {
        self.rows.push(Row {
            figure: figure.into(),
            reveille,
            baseline: baseline.into(),
            ratio: ratio.into(),
            target: target.into(),
            pass,
        });
    }

    /// The results as markdown.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "machine: {}\n", self.machine);
        s.push_str(
            "| figure | reveille | baseline | ratio | target | |\n|---|---|---|---|---|---|\n",
        );
        for r in &self.rows {
            let verdict = match r.pass {
                Some(true) => "pass",
                Some(false) => "**FAIL**",
                None => "",
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {verdict} |",
                r.figure, r.reveille, r.baseline, r.ratio, r.target
            );
        }
        if !self.scale.is_empty() {
            s.push_str("\nGrowth with plans (20 steps each) and sessions:\n\n");
            s.push_str("| plans | sessions | READY 1st | READY 2nd | VmHWM at READY | VmHWM peak | idle CPU | idle switches | wake p50 | wake max | burst (all sessions) |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
            for r in &self.scale {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {:.1} MiB | {:.1} MiB | {:.0} ms / {:.0} s | {} | {} | {} | {} ({} writes) |",
                    r.plans,
                    r.sessions,
                    ms(r.ready_first),
                    ms(r.ready_second),
                    r.rss_ready_kib as f64 / 1024.0,
                    r.rss_peak_kib as f64 / 1024.0,
                    r.idle_cpu_ms,
                    r.idle_secs,
                    r.idle_switches,
                    us(r.p50()),
                    us(max(&r.wakes)),
                    ms(r.burst_total),
                    ms(r.burst_writes),
                );
            }
        }
        if !self.notes.is_empty() {
            s.push('\n');
            for n in &self.notes {
                let _ = writeln!(s, "- {n}");
            }
        }
        let _ = writeln!(
            s,
            "\nran in {:.0} s; load average at the end {}",
            self.elapsed.as_secs_f64(),
            loadavg()
        );
        s
    }
}

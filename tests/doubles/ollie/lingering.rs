//! Sessions that are gone from the server but still resolve through the
//! mount for a while. 9pfuse answers every lookup with an entry the kernel
//! keeps for `entrytimeout` (1 s: plan9port src/cmd/9pfuse/main.c,
//! `double entrytimeout = 1.0`), and an open through a kept entry reuses
//! 9pfuse's fid for it without walking the name again. So for about a
//! second after a kill or a rename, `s/<old id>/prompt` still opens, and
//! what is written there is acted on at clunk by whatever the fid now
//! names: a killed session is not found (the write is lost, and since
//! `prompt`, `fifo.in` and `ctl` are handled on a goroutine — server.go
//! `clunk` / `isAsyncWrite` — nobody is told); a renamed one is reached
//! under its new id (server.go `New`: the `OnRename` hook rewrites every
//! fid of the old path to the new one).
//!
//! The double is harsher than the kernel in one way: a name lingers for
//! every lookup in that second, not only for entries looked up before.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a gone session's entry resolves (9pfuse's `entrytimeout`).
pub const ENTRY_TIMEOUT: Duration = Duration::from_secs(1);

/// Where a lingering name leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leads {
    /// Killed: nowhere.
    Nowhere,
    /// Renamed: to the session's new id.
    To(String),
}

/// The gone ids and since when.
#[derive(Default)]
pub struct Lingering {
    gone: Mutex<BTreeMap<String, (Instant, Leads)>>,
}

impl Lingering {
    /// `id` was killed now.
    pub fn killed(&self, id: &str) {
        self.left(id, Leads::Nowhere);
    }

    /// `old` was renamed to `new` now.
    pub fn renamed(&self, old: &str, new: &str) {
        self.left(old, Leads::To(new.to_string()));
    }

    fn left(&self, id: &str, leads: Leads) {
        let mut gone = self.gone.lock().unwrap();
        gone.retain(|_, (at, _)| at.elapsed() < ENTRY_TIMEOUT);
        gone.insert(id.to_string(), (Instant::now(), leads));
    }

    /// Where `id` leads if it is gone and still lingers.
    pub fn lookup(&self, id: &str) -> Option<Leads> {
        let gone = self.gone.lock().unwrap();
        let (at, leads) = gone.get(id)?;
        (at.elapsed() < ENTRY_TIMEOUT).then(|| leads.clone())
    }
}

//! The journal as the loop keeps it: records staged and written before
//! each delivery and at the end of each input, the group commit
//! (`fdatasync` batched off the wake path), compaction, and a failing
//! state directory said once (and in `STATUS=`).

use tokio::time::Instant;

use crate::config::Settings;
use crate::core::memory::Memory;
use crate::core::record::Record;
use crate::shell::store::Store;

/// The state directory's journal and what the loop knows of it.
pub(super) struct Journal {
    pub(super) store: Store,
    /// When the journal must next be fdatasync'ed (group commit).
    pub(super) sync_at: Option<Instant>,
    /// Whether a persistence failure was already reported (said once).
    pub(super) failing: bool,
}

impl Journal {
    pub(super) fn new(store: Store) -> Journal {
        Journal {
            store,
            sync_at: None,
            failing: false,
        }
    }

    /// Stage a record; write the staged ones when the stage is full.
    pub(super) fn persist(&mut self, settings: &Settings, record: &Record) {
        if let Err(e) = self.store.stage(record) {
            tracing::error!(project = %settings.project.name, "cannot encode a state record: {e}");
        }
        if self.store.staged_full() {
            self.flush(settings);
        }
    }

    /// Write the staged records (one `write(2)`): before every delivery and
    /// at the end of every input.
    pub(super) fn flush(&mut self, settings: &Settings) {
        if !self.store.has_staged() {
            return;
        }
        match self.store.flush() {
            Ok(()) => {
                if self.failing {
                    self.failing = false;
                    tracing::info!(project = %settings.project.name, "state directory writable again");
                }
                if self.sync_at.is_none() {
                    self.sync_at = Some(Instant::now() + settings.state.sync_interval);
                }
            }
            Err(e) => {
                // Keep working from memory: a wake-up that cannot be recorded
                // is still delivered (at-least-once allows a repeat after a
                // crash; silence would lose it).
                if !self.failing {
                    self.failing = true;
                    tracing::error!(project = %settings.project.name, "cannot record state: {e}; continuing from memory, a crash now may repeat prompts");
                }
            }
        }
    }

    /// The group commit, off the event loop; compaction when the journal
    /// grew past `state.compact_bytes`.
    pub(super) fn sync(&mut self, settings: &Settings, memory: &Memory) {
        self.sync_at = None;
        if !self.store.needs_sync() {
            return;
        }
        if let Ok(file) = self.store.sync_handle() {
            // Off the event loop: fdatasync costs milliseconds.
            tokio::task::spawn_blocking(move || {
                if let Err(e) = file.sync_data() {
                    tracing::error!("fdatasync of the journal failed: {e}");
                }
            });
        }
        if self.store.journal_bytes() > settings.state.compact_bytes {
            self.compact(settings, memory);
        }
    }

    /// Write the snapshot and truncate the journal.
    pub(super) fn compact(&mut self, settings: &Settings, memory: &Memory) {
        if let Err(e) = self.store.compact(memory) {
            if !self.failing {
                self.failing = true;
                tracing::error!(project = %settings.project.name, "cannot write the state snapshot: {e}");
            }
        }
    }
}

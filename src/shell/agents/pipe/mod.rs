//! The kind of a bare session id: a directory under `sessions.dir`
//! (`core::session::Kind::Dir`), reached by writing its enqueue file — a
//! named pipe or a regular file — or, when the directory is an ollie-9p
//! session, by a Submit (`agents::ollie`, which also observes such
//! sessions). Its configuration section is `[sessions]` (and `[fanout]`
//! for ollie-9p children). A pipe or a file has no observer: nothing but
//! its reader opening it (`Input::SessionActivity`, from the watcher)
//! says anything of it.
//!
//! The target is `<sessions_dir>/<session>/<enqueue>`, opened (`open`)
//! below the configured root with one `openat2` (`RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`, from the root held open) or, where that fails,
//! with `openat` and `O_NOFOLLOW` at each step, so no session id and no
//! symlink planted in a session directory can steer a write outside
//! `sessions_dir`. Named pipes are opened non-blocking: no
//! reader (ENXIO), a full pipe (EAGAIN) and a closed reader (EPIPE; SIGPIPE is
//! ignored by the Rust runtime) come back as `Undeliverable` and the prompt
//! stays first in its outbox. A prompt larger than the pipe's atomic size may
//! be written partially; the rest is finished in the background when the
//! pipe drains, before anything else goes to that session (the engine keeps
//! the session's lane busy until the outcome arrives). Regular and FUSE/9P
//! files are written on a blocking thread, since a 9P server may take its
//! time, and one slow session must not hold up the others.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::unix::AsyncFd;

use crate::config::{self, Framing, Settings};
use crate::core::effect::{Delivery, Spawn};
use crate::core::input::{Evidence, Input, Reached, Undeliverable};
use crate::shell::agents::ollie;
use crate::shell::agents::ollie::held::Held;
use crate::shell::agents::ollie::spawn::Spawner;
use crate::shell::backend::{on_thread, outcome, undeliverable, Backend, Reports, Thread};

mod open;

pub use open::HeldRoot;
use open::Target;

/// The backend of directory sessions (`<sessions_dir>/<id>/`): named pipes,
/// files, and ollie-9p sessions. Writes prompts, one per session at a time
/// (the engine guarantees that), and creates and kills ollie-9p children.
/// Cloned onto a blocking thread for each delivery: every open, stat and
/// write of the session tree happens there, never on the event loop.
#[derive(Clone)]
pub struct DirBackend {
    pub sessions_dir: PathBuf,
    pub enqueue: String,
    pub framing: Framing,
    /// Submit to sessions recognised as ollie-9p ones (`prompt` + `cfg` or
    /// `state` in the directory) instead of writing their enqueue file.
    pub submit: bool,
    /// Where background outcomes and turn starts are reported.
    pub reports: Reports,
    /// The sessions root, held open between deliveries.
    pub root: Arc<HeldRoot>,
    /// ollie-9p's `idx` and session directories, held open between
    /// Submits.
    pub ollie: Arc<Held>,
    /// Creates and kills ollie-9p child sessions (fan-out).
    pub spawner: Spawner,
}

impl DirBackend {
    /// The backend as the settings say (`[sessions]`, `[fanout]`).
    pub fn new(settings: &Settings, reports: &Reports) -> DirBackend {
        DirBackend {
            sessions_dir: settings.sessions.dir.clone(),
            enqueue: settings.sessions.enqueue.clone(),
            framing: settings.sessions.framing,
            submit: settings.sessions.delivery == config::Delivery::Auto,
            reports: reports.clone(),
            root: Default::default(),
            ollie: Default::default(),
            spawner: Spawner {
                sessions_dir: settings.sessions.dir.clone(),
                backend: settings.fanout.backend.clone(),
                model: settings.fanout.model.clone(),
                project: settings.project.name.clone(),
                reports: reports.clone(),
            },
        }
    }

    /// Where the session's enqueue file is.
    pub fn path_of(&self, session: &str) -> PathBuf {
        self.sessions_dir.join(session).join(&self.enqueue)
    }

    fn frame(&self, d: &Delivery, fifo: bool) -> Vec<u8> {
        let framing = match self.framing {
            Framing::Auto if fifo => Framing::Nul,
            Framing::Auto => Framing::Message,
            other => other,
        };
        match framing {
            Framing::Message | Framing::Auto => d.text.as_bytes().to_vec(),
            Framing::Nul => {
                let mut b = Vec::with_capacity(d.text.len() + 1);
                b.extend_from_slice(d.text.as_bytes());
                b.push(0);
                b
            }
            Framing::Jsonl => {
                let mut b = serde_json::to_vec(&serde_json::json!({
                    "prompt": d.text,
                    "plan": d.plan,
                    "step": d.step,
                    "session": d.session,
                }))
                .unwrap_or_default();
                b.push(b'\n');
                b
            }
        }
    }

    /// Try to deliver now. `Some` is the outcome; `None` means the write
    /// continues in the background and its outcome will be reported.
    fn write(&self, d: &Delivery, thread: Thread) -> Option<Result<Reached, Undeliverable>> {
        let target = match self.open(&d.session) {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        match target {
            Target::Fifo(file) => {
                let bytes = self.frame(d, true);
                match write_some(&file, &bytes) {
                    Ok(n) if n == bytes.len() => Some(Ok(Reached::Written)),
                    Ok(n) => {
                        self.finish_later(file, bytes, n, d);
                        None
                    }
                    Err(e) => Some(Err(fifo_error(e))),
                }
            }
            Target::Regular(mut file) => {
                let bytes = self.frame(d, false);
                on_thread(thread, &self.reports, d, move |_| {
                    let evidence = match file.write_all(&bytes) {
                        Ok(()) => Evidence::Written,
                        Err(e) => Evidence::Refused(format!("write: {e}")),
                    };
                    drop(file);
                    evidence
                });
                None
            }
            Target::Ollie(dir, flavour) => {
                let (held, sessions_dir) = (self.ollie.clone(), &self.sessions_dir);
                let reports = &self.reports;
                ollie::submit::submit_later(thread, reports, d, dir, flavour, held, sessions_dir);
                None
            }
        }
    }

    /// Finish a partial pipe write when the pipe drains. Nothing else is
    /// written to this session meanwhile, so the prompt is never interleaved.
    fn finish_later(&self, file: File, bytes: Vec<u8>, mut done: usize, d: &Delivery) {
        let reports = self.reports.clone();
        let (session, seq) = (d.session.clone(), d.seq);
        tokio::spawn(async move {
            let result = async {
                // SAFETY: `File` owns its fd and nothing replaces or closes
                // it while the `AsyncFd` holds it.
                let afd =
                    unsafe { AsyncFd::register_with_interest(file, tokio::io::Interest::WRITABLE) }
                        .map_err(|e| undeliverable(format!("poll: {e}")))?;
                while done < bytes.len() {
                    let mut guard = afd
                        .writable()
                        .await
                        .map_err(|e| undeliverable(format!("poll: {e}")))?;
                    match guard.try_io(|f| write_some(f.get_ref(), &bytes[done..])) {
                        Ok(Ok(n)) => done += n,
                        Ok(Err(e)) => return Err(fifo_error(e)),
                        Err(_would_block) => continue,
                    }
                }
                Ok(Reached::Written)
            }
            .await;
            let evidence = match result {
                Ok(_) => Evidence::Written,
                Err(why) => Evidence::Refused(why.reason),
            };
            let _ = reports.send(Input::Evidence {
                session,
                seq,
                evidence,
            });
        });
    }
}

impl Backend for DirBackend {
    /// On a mounted sessions root, on a blocking thread: opening the
    /// enqueue file stats and opens the root, which on a hung mount (a
    /// 9pfuse tree whose link is cut) blocks until it heals — that
    /// session's lane waits, not the loop; the outcome comes back through
    /// the reports. A local one is written at once, so its outcome is in
    /// the journal before the next prompt is written (a crash repeats at
    /// most one prompt).
    fn deliver(&mut self, d: &Delivery) -> Option<Result<Reached, Undeliverable>> {
        if !self.root.mounted.load(Ordering::Relaxed) {
            return self.write(d, Thread::Loop);
        }
        let (lane, d) = (self.clone(), d.clone());
        tokio::task::spawn_blocking(move || {
            if let Some(result) = lane.write(&d, Thread::Blocking) {
                let _ = lane.reports.send(outcome(d.session, d.seq, result));
            }
        });
        None
    }

    fn root_polled(&mut self, polled: bool) {
        self.root.set_mounted(polled);
    }

    fn spawn(&mut self, spawn: &Spawn) -> Option<Input> {
        self.spawner.spawn(spawn);
        None
    }

    fn reap(&mut self, child: &str) {
        self.spawner.reap(child);
    }
}

fn write_some(file: &File, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: writing from a valid slice to an fd we own.
    let n = unsafe { libc::write(file.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

fn fifo_error(e: io::Error) -> Undeliverable {
    match e.raw_os_error() {
        Some(libc::EAGAIN) => undeliverable("the FIFO is full (EAGAIN)"),
        Some(libc::EPIPE) => undeliverable("the FIFO's reader went away (EPIPE)"),
        _ => undeliverable(format!("write: {e}")),
    }
}

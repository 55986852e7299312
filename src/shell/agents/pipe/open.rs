//! Opening a session's enqueue file below the sessions root, and nowhere
//! else: one `openat2` (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`) from the
//! root held open, or `openat` with `O_NOFOLLOW` at each step, which names
//! the cause of any failure; and what was opened (a named pipe, a regular
//! file, or an ollie-9p session's directory).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::DirBackend;
use crate::core::input::Undeliverable;
use crate::core::session::check_name;
use crate::shell::agents::ollie::tree::listed;
use crate::shell::agents::ollie::{self, Flavour};
use crate::shell::backend::undeliverable;

/// The sessions root held open for `openat2`, with the identity it had
/// when opened: it is used only while a `stat` of the configured path
/// still finds that directory (a root deleted and recreated, or a changed
/// `sessions.dir`, is opened afresh).
#[derive(Default)]
pub struct HeldRoot {
    pub(super) held: Mutex<Option<Root>>,
    /// The kernel has no `openat2`: always go step by step.
    unsupported: AtomicBool,
    /// The loop polls the sessions root (a FUSE/9P mount, which may hang):
    /// deliveries open it on a blocking thread.
    pub(super) mounted: AtomicBool,
}

/// The sessions root as opened.
pub(super) struct Root {
    path: PathBuf,
    dev: u64,
    ino: u64,
    fd: Arc<OwnedFd>,
    /// On a FUSE/9P (or other remote) file system, asked once when it was
    /// opened rather than with a `statfs` per delivery: it is a property
    /// of the directory held, which the identity check keeps the same.
    remote: bool,
}

impl HeldRoot {
    /// Whether the sessions root is a mount, as the watcher found it (the
    /// loop tells, without a `stat` of its own).
    pub fn set_mounted(&self, on: bool) {
        self.mounted.store(on, Ordering::Relaxed);
    }

    /// The held root fd and whether it is remote, after one `stat` of the
    /// configured path. The fd is shared: another lane may replace the
    /// held root while this one still opens below it.
    /// The identity (device, inode) of the root held now.
    pub(super) fn identity(&self) -> Option<(u64, u64)> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.as_ref().map(|r| (r.dev, r.ino))
    }

    pub(super) fn get(&self, dir: &Path) -> Option<(Arc<OwnedFd>, bool)> {
        if self.unsupported.load(Ordering::Relaxed) {
            return None;
        }
        let meta = std::fs::metadata(dir).ok()?;
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let current = held
            .as_ref()
            .is_some_and(|r| r.path == dir && r.dev == meta.dev() && r.ino == meta.ino());
        if !current {
            let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
            let fd = openat(libc::AT_FDCWD, &c, libc::O_RDONLY | libc::O_DIRECTORY).ok()?;
            let st = nix::sys::stat::fstat(fd.as_raw_fd()).ok()?;
            let remote = nix::sys::statfs::fstatfs(&fd)
                .ok()
                .and_then(|st| crate::shell::watch::remote_fs_kind(&st))
                .is_some();
            *held = Some(Root {
                path: dir.to_path_buf(),
                dev: st.st_dev,
                ino: st.st_ino,
                fd: Arc::new(fd),
                remote,
            });
        }
        held.as_ref().map(|r| (r.fd.clone(), r.remote))
    }
}

/// Whether `dir` is on a FUSE/9P (or other remote) file system.
fn remote(dir: &Path) -> bool {
    nix::sys::statfs::statfs(dir)
        .ok()
        .and_then(|st| crate::shell::watch::remote_fs_kind(&st))
        .is_some()
}

/// Why the sessions directory cannot be opened, in words: the two ways
/// a mounted session tree (an ollie-9p tree under 9pfuse) goes away are
/// named as such, since both end when it is mounted again.
fn sessions_dir_unusable(dir: &Path, e: &io::Error) -> Undeliverable {
    let dir = dir.display();
    match e.raw_os_error() {
        Some(libc::ENOENT) => undeliverable(format!(
            "sessions_dir {dir} does not exist (not mounted? an ollie-9p tree is gone when 9pfuse exits, as it does when its connection ends): {e}"
        )),
        Some(libc::ENOTCONN) => undeliverable(format!(
            "sessions_dir {dir} is a mount whose server is gone (9pfuse exited): {e}"
        )),
        _ => undeliverable(format!("sessions_dir {dir}: {e}")),
    }
}

fn cstr(s: &str) -> Result<CString, Undeliverable> {
    CString::new(s).map_err(|_| undeliverable("name contains a NUL byte"))
}

/// `openat(dir, name, flags)` as an owned fd.
fn openat(dir: libc::c_int, name: &CString, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a valid C string and `dir` an fd we own or AT_FDCWD.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, 0) };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: a fresh fd returned by openat, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

pub(super) enum Target {
    Fifo(File),
    Regular(File),
    /// An ollie-9p session directory (held between Submits): Submit
    /// through its `prompt`, once `idx` says it is still listed.
    Ollie(Arc<OwnedFd>, Flavour),
}

impl DirBackend {
    pub(super) fn open(&self, session: &str) -> Result<Target, Undeliverable> {
        check_name(session).map_err(|why| undeliverable(format!("session id {why}")))?;
        let root = self.root.get(&self.sessions_dir);
        // ollie-9p is only ever served over 9P (9pfuse or the kernel's
        // v9fs): only a remote sessions root can hold its sessions, and
        // only there is the session directory opened to look.
        let remote_root = || {
            root.as_ref()
                .map_or_else(|| remote(&self.sessions_dir), |(_, r)| *r)
        };
        if self.submit && remote_root() {
            // What is held of the tree is of the root just looked at.
            self.ollie
                .below(root.as_ref().and_then(|_| self.root.identity()));
            if let Some((dir, flavour)) = self.ollie.dir(session) {
                return Ok(Target::Ollie(dir, flavour));
            }
            let held = root.as_ref().map(|(fd, _)| fd.as_ref());
            let dir = self.open_session_dir(session, held)?;
            if let Some(flavour) = ollie::recognise(&dir) {
                let dir = Arc::new(dir);
                self.ollie.keep(session, dir.clone(), flavour);
                return Ok(Target::Ollie(dir, flavour));
            }
            // A session killed or renamed a moment ago: its directory still
            // resolves, its files no longer do (or only some): on an
            // ollie-9p tree it is no session at all, not a file to write.
            if listed(&self.sessions_dir, session).is_ok_and(|l| !l) {
                return Err(undeliverable(
                    "the session is no longer listed in idx (killed or renamed); its prompts wait in its outbox",
                ));
            }
            let fd = self.open_enqueue_in(&dir, session)?;
            return self.target(fd, session);
        }
        let opened = root.and_then(|(fd, _)| self.open_beneath(fd.as_raw_fd(), session));
        let fd = match opened {
            Some(opened) => opened?,
            None => self.open_step_by_step(session)?,
        };
        self.target(fd, session)
    }

    /// The enqueue file in one `openat2` below the held sessions root:
    /// `RESOLVE_BENEATH` refuses any escape (`..`, absolute paths) and
    /// `RESOLVE_NO_SYMLINKS` any symlink on the way, which is what the
    /// step-by-step `openat`s promise, in one call and without opening the
    /// session directory (each directory opened is an event on the watched
    /// sessions tree, one more wake-up of the inotify thread). `None`: take
    /// the step-by-step way — no `openat2` in this kernel, or any failure
    /// but "no reader", whose exact cause that way names.
    pub(super) fn open_beneath(
        &self,
        root: libc::c_int,
        session: &str,
    ) -> Option<Result<OwnedFd, Undeliverable>> {
        let rel = CString::new(format!("{session}/{}", self.enqueue)).ok()?;
        // SAFETY: `open_how` is plain integers; all-zero is its default.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (libc::O_WRONLY
            | libc::O_NONBLOCK
            | libc::O_NOFOLLOW
            | libc::O_NOCTTY
            | libc::O_CLOEXEC) as u64;
        how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
        // SAFETY: a valid C string, a held directory fd, and `how` with its size.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                root,
                rel.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            // SAFETY: a fresh fd returned by openat2, owned by nobody else.
            return Some(Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) }));
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::ENXIO) => Some(Err(undeliverable("no reader on the FIFO (ENXIO)"))),
            Some(libc::ENOSYS) => {
                self.root.unsupported.store(true, Ordering::Relaxed);
                None
            }
            _ => None,
        }
    }

    /// The enqueue file by `openat` from the sessions root, `O_NOFOLLOW` at
    /// each step, with the exact reason when it cannot be opened.
    fn open_step_by_step(&self, session: &str) -> Result<OwnedFd, Undeliverable> {
        let dir = self.open_session_dir(session, None)?;
        self.open_enqueue_in(&dir, session)
    }

    /// The session directory, by `openat` from the sessions root with
    /// `O_NOFOLLOW`.
    fn open_session_dir(
        &self,
        session: &str,
        held: Option<&OwnedFd>,
    ) -> Result<OwnedFd, Undeliverable> {
        // Below the held root when there is one: opening the root again is
        // a round trip to the 9P server on every wake-up.
        let opened;
        let root = match held {
            Some(fd) => fd,
            None => {
                let path = CString::new(self.sessions_dir.as_os_str().as_bytes())
                    .map_err(|_| undeliverable("sessions_dir contains a NUL byte"))?;
                opened = openat(libc::AT_FDCWD, &path, libc::O_RDONLY | libc::O_DIRECTORY)
                    .map_err(|e| sessions_dir_unusable(&self.sessions_dir, &e))?;
                &opened
            }
        };
        let dir = openat(
            root.as_raw_fd(),
            &cstr(session)?,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        )
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENOENT) => undeliverable("no session directory yet"),
            Some(libc::ELOOP) | Some(libc::ENOTDIR) => undeliverable(
                "the session directory is a symlink or not a directory; reveille never writes through symlinks",
            ),
            _ => undeliverable(format!("session directory: {e}")),
        })?;
        Ok(dir)
    }

    /// The enqueue file in an opened session directory, `O_NOFOLLOW`.
    fn open_enqueue_in(&self, dir: &OwnedFd, session: &str) -> Result<OwnedFd, Undeliverable> {
        // Only named in errors: built only for them.
        let path = || self.path_of(session);
        let fd = openat(
            dir.as_raw_fd(),
            &cstr(&self.enqueue)?,
            libc::O_WRONLY | libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY,
        )
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => undeliverable("no reader on the FIFO (ENXIO)"),
            Some(libc::ENOENT) => {
                undeliverable(format!("no enqueue file {} yet", path().display()))
            }
            Some(libc::ELOOP) => undeliverable(format!(
                "{} is a symlink; reveille never writes through symlinks",
                path().display()
            )),
            Some(libc::EISDIR) => undeliverable(format!("{} is a directory", path().display())),
            _ => undeliverable(format!("{}: {e}", path().display())),
        })?;
        Ok(fd)
    }

    /// What kind of enqueue file was opened, ready to write.
    fn target(&self, fd: OwnedFd, session: &str) -> Result<Target, Undeliverable> {
        let path = || self.path_of(session);
        let file = File::from(fd);
        let kind = file
            .metadata()
            .map_err(|e| undeliverable(format!("{}: {e}", path().display())))?
            .file_type();
        if kind.is_fifo() {
            Ok(Target::Fifo(file))
        } else if kind.is_file() {
            // A local regular file is read as a whole by whoever consumes
            // it: append, or each prompt would overwrite the start of the
            // one before. A FUSE/9P file (ollie-9p's `fifo.in`) is a message
            // endpoint: one write at offset 0 per open, as it expects.
            let remote = nix::sys::statfs::fstatfs(&file)
                .ok()
                .and_then(|st| crate::shell::watch::remote_fs_kind(&st));
            if remote.is_none() {
                set_append(&file)
                    .map_err(|e| undeliverable(format!("{}: {e}", path().display())))?;
            }
            Ok(Target::Regular(file))
        } else {
            Err(undeliverable(format!(
                "{} is neither a named pipe nor a regular file",
                path().display()
            )))
        }
    }
}

/// Turn on `O_APPEND` for an open file.
fn set_append(file: &File) -> io::Result<()> {
    // SAFETY: fcntl on an fd we own, with integer arguments only.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags | libc::O_APPEND) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Framing;
    use crate::shell::agents::ollie::spawn::Spawner;
    use crate::shell::backend::Reports;
    use std::os::unix::fs::symlink;

    fn deliverer(dir: &Path) -> DirBackend {
        DirBackend {
            sessions_dir: dir.to_path_buf(),
            enqueue: "fifo.in".into(),
            framing: Framing::Auto,
            submit: true,
            reports: Reports::channel().0,
            root: Default::default(),
            ollie: Default::default(),
            spawner: Spawner {
                sessions_dir: dir.to_path_buf(),
                backend: None,
                model: None,
                project: "test".into(),
                reports: Reports::channel().0,
            },
        }
    }

    /// `open_beneath` from the root as `open` gets it.
    fn beneath(d: &DirBackend, session: &str) -> Option<Result<OwnedFd, Undeliverable>> {
        let (root, _) = d.root.get(&d.sessions_dir)?;
        d.open_beneath(root.as_raw_fd(), session)
    }

    /// The one-call way opens a session's enqueue file below the held
    /// root, and refuses every symlink itself (the step-by-step way then
    /// names the cause), so it never reaches outside the sessions root.
    #[test]
    fn openat2_opens_below_the_root_and_never_through_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let sessions = tmp.path().join("s");
        std::fs::create_dir_all(sessions.join("good")).unwrap();
        std::fs::write(sessions.join("good/fifo.in"), "").unwrap();
        std::fs::write(tmp.path().join("outside"), "").unwrap();
        std::fs::create_dir(sessions.join("linked")).unwrap();
        symlink(tmp.path().join("outside"), sessions.join("linked/fifo.in")).unwrap();
        std::fs::create_dir(tmp.path().join("outdir")).unwrap();
        std::fs::write(tmp.path().join("outdir/fifo.in"), "").unwrap();
        symlink(tmp.path().join("outdir"), sessions.join("dirlink")).unwrap();
        let d = deliverer(&sessions);
        assert!(matches!(beneath(&d, "good"), Some(Ok(_))));
        assert!(d.root.held.lock().unwrap().is_some(), "the root is held");
        assert_eq!(d.root.get(&sessions).map(|(_, remote)| remote), Some(false));
        for hostile in ["linked", "dirlink", "../outdir"] {
            assert!(beneath(&d, hostile).is_none(), "{hostile}");
        }
        assert!(d.open("linked").is_err());
        assert!(d.open("dirlink").is_err());
        // The root replaced: the new one is opened, not the held one.
        std::fs::rename(&sessions, tmp.path().join("old")).unwrap();
        std::fs::create_dir_all(sessions.join("good")).unwrap();
        assert!(beneath(&d, "good").is_none(), "no fifo.in in the new root");
    }
}

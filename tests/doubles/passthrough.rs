//! A real directory served through a FUSE mount over itself, for a fault
//! the real program that writes there cannot be made to show: a read that
//! fails (EIO, as a failing disk or a network home directory gives) — for
//! one process only, so the program that owns the files goes on writing
//! and reading them as usual.
//!
//! Everything is passed through to the directory as it was before the
//! mount, reached through a descriptor opened before mounting
//! (`/proc/self/fd/<n>/…` walks below the covered directory, not into the
//! mount). Each open is `FOPEN_DIRECT_IO` and attributes are not cached,
//! so every `read(2)` and `stat(2)` is a request here, where a fault can
//! meet it. FUSE names the thread that asks; its process (`Tgid`) is what
//! a fault is aimed at.
//!
//! inotify: the kernel reports a change made through the mount on the
//! mount's own inodes, so a watch placed on the mounted directory sees
//! what another process writes through it (`passthrough_tests` holds it
//! to that); a watch placed before the mount, on the covered directory,
//! sees nothing of it.

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    LockOwner, MountOption, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, SessionACL, WriteFlags,
};

/// Nothing cached by the kernel: every lookup and stat asks the directory.
const TTL: Duration = Duration::ZERO;

/// Reads that fail: by which process, of which files.
#[derive(Default)]
struct Fault {
    /// `(pid, name suffix)` while armed.
    armed: Mutex<Option<(u32, String)>>,
    /// Reads failed so far.
    failed: AtomicU64,
}

impl Fault {
    /// Whether a read of `path` asked by thread `tid` fails now.
    fn meets(&self, tid: u32, path: &str) -> bool {
        let armed = self.armed.lock().unwrap();
        let Some((pid, suffix)) = armed.as_ref() else {
            return false;
        };
        if !path.ends_with(suffix.as_str()) || tgid(tid) != Some(*pid) {
            return false;
        }
        self.failed.fetch_add(1, Ordering::Relaxed);
        true
    }
}

/// The process thread `tid` belongs to.
fn tgid(tid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Tgid:"))?;
    line["Tgid:".len()..].trim().parse().ok()
}

/// A directory mounted over itself; unmounted on drop, and the directory
/// is then as the mount left it.
pub struct Passthrough {
    session: Option<fuser::BackgroundSession>,
    fault: Arc<Fault>,
    path: PathBuf,
}

impl Passthrough {
    /// Mount over `dir`, which exists (and may be in use: a file opened
    /// before stays the covered one's).
    pub fn over(dir: &Path) -> Result<Passthrough, String> {
        let root = File::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let fault = Arc::new(Fault::default());
        let fs = Served {
            root,
            fault: fault.clone(),
            inodes: Mutex::new(Inodes::default()),
            files: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        };
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName("reveille-passthrough".into()),
            MountOption::AutoUnmount,
        ];
        config.acl = SessionACL::All;
        let session =
            fuser::spawn_mount(fs, dir, &config).map_err(|e| format!("mount {dir:?}: {e}"))?;
        Ok(Passthrough {
            session: Some(session),
            fault,
            path: dir.to_path_buf(),
        })
    }

    /// From now on every read of a file whose name ends with `suffix`, by
    /// any thread of process `pid`, fails with EIO — until [`heal`].
    ///
    /// [`heal`]: Passthrough::heal
    pub fn fail_reads(&self, pid: u32, suffix: &str) {
        *self.fault.armed.lock().unwrap() = Some((pid, suffix.to_string()));
    }

    /// Reads pass again.
    pub fn heal(&self) {
        *self.fault.armed.lock().unwrap() = None;
    }

    /// Whether reads fail now.
    pub fn failing(&self) -> bool {
        self.fault.armed.lock().unwrap().is_some()
    }

    /// How many reads failed so far.
    pub fn failed(&self) -> u64 {
        self.fault.failed.load(Ordering::Relaxed)
    }
}

impl Drop for Passthrough {
    fn drop(&mut self) {
        if let Ok(c) = CString::new(self.path.as_os_str().as_bytes()) {
            // SAFETY: a valid NUL-terminated path.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        drop(self.session.take());
    }
}

/// Inode numbers for relative paths (`""` the root, 1).
#[derive(Default)]
struct Inodes {
    by_path: HashMap<String, u64>,
    by_ino: HashMap<u64, String>,
    next: u64,
}

impl Inodes {
    fn ino(&mut self, path: &str) -> u64 {
        if path.is_empty() {
            return 1;
        }
        if let Some(&ino) = self.by_path.get(path) {
            return ino;
        }
        self.next = self.next.max(1) + 1;
        self.by_path.insert(path.to_string(), self.next);
        self.by_ino.insert(self.next, path.to_string());
        self.next
    }

    fn path(&self, ino: u64) -> Option<String> {
        match ino {
            1 => Some(String::new()),
            _ => self.by_ino.get(&ino).cloned(),
        }
    }

    /// `from` (and everything under it) is now `to`.
    fn renamed(&mut self, from: &str, to: &str) {
        let moved: Vec<(String, u64)> = self
            .by_path
            .iter()
            .filter(|(p, _)| *p == from || p.starts_with(&format!("{from}/")))
            .map(|(p, i)| (p.clone(), *i))
            .collect();
        self.by_path.remove(to);
        for (old, ino) in moved {
            let new = format!("{to}{}", &old[from.len()..]);
            self.by_path.remove(&old);
            self.by_path.insert(new.clone(), ino);
            self.by_ino.insert(ino, new);
        }
    }
}

struct Served {
    /// The covered directory, opened before the mount.
    root: File,
    fault: Arc<Fault>,
    inodes: Mutex<Inodes>,
    /// Open files by handle, with their relative paths.
    files: Mutex<HashMap<u64, (Arc<File>, String)>>,
    next: AtomicU64,
}

fn join(dir: &str, name: &OsStr) -> Option<String> {
    let name = name.to_str()?;
    Some(if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    })
}

fn errno(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

impl Served {
    /// Where relative `path` is in the covered directory.
    fn real(&self, path: &str) -> PathBuf {
        let fd = PathBuf::from(format!("/proc/self/fd/{}", self.root.as_raw_fd()));
        if path.is_empty() {
            fd
        } else {
            fd.join(path)
        }
    }

    fn path_of(&self, ino: INodeNo) -> Result<String, Errno> {
        self.inodes.lock().unwrap().path(ino.0).ok_or(Errno::ENOENT)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<String, Errno> {
        join(&self.path_of(parent)?, name).ok_or(Errno::EINVAL)
    }

    fn attr(&self, path: &str) -> Result<FileAttr, Errno> {
        // The root is `/proc/self/fd/<n>` itself, a link to be followed
        // (its own lstat says symlink, and a root that changes type is
        // bad to the kernel: EIO for every request after).
        let meta = if path.is_empty() {
            std::fs::metadata(self.real(path))
        } else {
            std::fs::symlink_metadata(self.real(path))
        };
        let meta = meta.map_err(|e| errno(&e))?;
        let kind = if meta.is_dir() {
            FileType::Directory
        } else if meta.file_type().is_symlink() {
            FileType::Symlink
        } else {
            FileType::RegularFile
        };
        let time = |s: i64, ns: i64| UNIX_EPOCH + Duration::new(s.max(0) as u64, ns as u32);
        Ok(FileAttr {
            ino: INodeNo(self.inodes.lock().unwrap().ino(path)),
            size: meta.len(),
            blocks: meta.blocks(),
            atime: time(meta.atime(), meta.atime_nsec()),
            mtime: time(meta.mtime(), meta.mtime_nsec()),
            ctime: time(meta.ctime(), meta.ctime_nsec()),
            crtime: time(meta.ctime(), meta.ctime_nsec()),
            kind,
            perm: (meta.mode() & 0o7777) as u16,
            nlink: meta.nlink() as u32,
            uid: meta.uid(),
            gid: meta.gid(),
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    fn entry(&self, path: &str, reply: ReplyEntry) {
        match self.attr(path) {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn keep(&self, file: File, path: String) -> FileHandle {
        let fh = self.next.fetch_add(1, Ordering::Relaxed);
        self.files
            .lock()
            .unwrap()
            .insert(fh, (Arc::new(file), path));
        FileHandle(fh)
    }

    fn file(&self, fh: FileHandle) -> Result<(Arc<File>, String), Errno> {
        let files = self.files.lock().unwrap();
        files.get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    fn options(flags: i32) -> OpenOptions {
        let mut o = OpenOptions::new();
        match flags & libc::O_ACCMODE {
            libc::O_RDONLY => o.read(true),
            libc::O_WRONLY => o.write(true),
            _ => o.read(true).write(true),
        };
        if flags & libc::O_APPEND != 0 {
            o.append(true);
        }
        o.custom_flags(flags & libc::O_TRUNC);
        o
    }

    fn done(reply: ReplyEmpty, r: std::io::Result<()>) {
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }
}

impl Filesystem for Served {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.child(parent, name) {
            Ok(path) => self.entry(&path, reply),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.path_of(ino).and_then(|p| self.attr(&p)) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let path = match self.path_of(ino) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let real = self.real(&path);
        let changed = (|| {
            if let Some(mode) = mode {
                std::fs::set_permissions(&real, std::fs::Permissions::from_mode(mode & 0o7777))?;
            }
            if uid.is_some() || gid.is_some() {
                std::os::unix::fs::chown(&real, uid, gid)?;
            }
            if let Some(size) = size {
                OpenOptions::new().write(true).open(&real)?.set_len(size)?;
            }
            Ok(())
        })();
        match changed
            .map_err(|e| errno(&e))
            .and_then(|()| self.attr(&path))
        {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let path = match self.child(parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let mut b = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, mode & !umask);
        match b.create(self.real(&path)) {
            Ok(()) => self.entry(&path, reply),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.child(parent, name) {
            Ok(path) => Self::done(reply, std::fs::remove_file(self.real(&path))),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.child(parent, name) {
            Ok(path) => Self::done(reply, std::fs::remove_dir(self.real(&path))),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        _flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let (from, to) = match (self.child(parent, name), self.child(newparent, newname)) {
            (Ok(f), Ok(t)) => (f, t),
            (Err(e), _) | (_, Err(e)) => return reply.error(e),
        };
        match std::fs::rename(self.real(&from), self.real(&to)) {
            Ok(()) => {
                self.inodes.lock().unwrap().renamed(&from, &to);
                reply.ok()
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let path = match self.path_of(ino) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        match Self::options(flags.0).open(self.real(&path)) {
            Ok(file) => reply.opened(self.keep(file, path), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let path = match self.child(parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let mut o = Self::options(flags);
        o.create(true).mode(mode & !umask);
        if flags & libc::O_EXCL != 0 {
            o.create_new(true);
        }
        let file = match o.open(self.real(&path)) {
            Ok(f) => f,
            Err(e) => return reply.error(errno(&e)),
        };
        match self.attr(&path) {
            Ok(attr) => {
                let fh = self.keep(file, path);
                reply.created(&TTL, &attr, Generation(0), fh, FopenFlags::FOPEN_DIRECT_IO)
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let (file, path) = match self.file(fh) {
            Ok(f) => f,
            Err(e) => return reply.error(e),
        };
        if self.fault.meets(req.pid(), &path) {
            return reply.error(Errno::EIO);
        }
        let mut buf = vec![0; size as usize];
        let mut got = 0;
        while got < buf.len() {
            match file.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return reply.error(errno(&e)),
            }
        }
        reply.data(&buf[..got]);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        // A file opened O_APPEND appends whatever the offset (pwrite(2)).
        match self.file(fh).map(|(f, _)| f.write_all_at(data, offset)) {
            Ok(Ok(())) => reply.written(data.len() as u32),
            Ok(Err(e)) => reply.error(errno(&e)),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.file(fh) {
            Ok((f, _)) => Self::done(reply, f.sync_all()),
            Err(e) => reply.error(e),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.files.lock().unwrap().remove(&fh.0);
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let dir = match self.path_of(ino) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let listed = match std::fs::read_dir(self.real(&dir)) {
            Ok(l) => l,
            Err(e) => return reply.error(errno(&e)),
        };
        let mut entries = vec![
            (ino.0, FileType::Directory, ".".to_string()),
            (ino.0, FileType::Directory, "..".to_string()),
        ];
        for e in listed.flatten() {
            let name = e.file_name();
            let Some(path) = join(&dir, &name) else {
                continue;
            };
            let kind = match e.file_type() {
                Ok(t) if t.is_dir() => FileType::Directory,
                Ok(t) if t.is_symlink() => FileType::Symlink,
                _ => FileType::RegularFile,
            };
            let child = self.inodes.lock().unwrap().ino(&path);
            entries.push((child, kind, name.to_string_lossy().into_owned()));
        }
        for (i, (child, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(child), i as u64 + 1, kind, &name) {
                break;
            }
        }
        reply.ok();
    }
}

//! A synthetic file tree served through a real FUSE mount, the way 9pfuse
//! (plan9port `src/cmd/9pfuse/main.c`) serves a 9P server's tree: the test
//! doubles of ollie-9p and 9beads are a [`Tree`], and whatever reads them —
//! the daemon, `std::fs`, a shell — goes through the kernel as it would on a
//! user's machine.
//!
//! What 9pfuse does, and so what this layer does:
//! - every open is `FOPEN_DIRECT_IO` (files and directories): no page cache,
//!   every `read(2)` is a request to the server, which produces the content
//!   afresh (ollie-9p's `read` regenerates it per Tread);
//! - attributes and entries are cached by the kernel for 1 s (`attrtimeout`,
//!   `entrytimeout`); every lookup and getattr past that is a Tstat, which
//!   asks the server for the size ([`Tree::size`], which may have effects);
//!   mtimes never move (the servers report fixed times) and sizes are
//!   whatever the server reports, not the length of the content;
//! - each `write(2)` is a Twrite at its offset: the server assembles the text
//!   per open and acts on it when the file is closed (9P clunk, sent from
//!   `fuserelease`). The kernel sends RELEASE after `close(2)` has returned,
//!   and 9pfuse's reply to it is always 0: an error the server returns at
//!   clunk never reaches the writer, and two files closed one after the
//!   other may be acted on in either order;
//! - `fuseflush` does nothing; a truncate to 0 without an open file is an
//!   open(OTRUNC) and a clunk with nothing written (the `fusesetattr`
//!   special case for synthetic servers);
//! - the server answers many requests at once (9pfuse runs a thread per
//!   request), so a blocking read (ollie's `statewait`) stalls no one else:
//!   reads and clunks are answered from their own thread here;
//! - an `open(O_CREAT)` of a missing name is a Tcreate ([`Tree::create`]).
//!
//! There are no inotify events for anything the server changes: the kernel
//! only reports what goes through its own VFS calls.

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, SessionACL, WriteFlags,
};

/// What a path in a [`Tree`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    Dir,
    File,
}

/// A synthetic file server. Paths are relative and `/`-separated, `""` is
/// the root (`"s/abc/prompt"`). Errors are errno values.
pub trait Tree: Send + Sync + 'static {
    /// What `path` is, or `None` when it does not exist.
    fn node(&self, path: &str) -> Option<Node>;
    /// The entry names of directory `dir`.
    fn list(&self, dir: &str) -> Vec<String>;
    /// The whole content of `path`, produced for one read request (the
    /// layer slices it at the request's offset). May block (statewait).
    fn read(&self, path: &str) -> Result<Vec<u8>, i32>;
    /// The whole text written through one open, delivered when it is
    /// closed (also with nothing written: a clunk of a file opened for
    /// writing). The result never reaches the writer, as over 9pfuse.
    fn write(&self, path: &str, text: &[u8]) -> Result<(), i32>;
    /// rmdir / unlink (`rm -r s/<id>` kills an ollie session).
    fn remove(&self, path: &str) -> Result<(), i32>;

    /// The size stat reports (servers report what they like; ollie-9p says
    /// 0 for most synthetic files).
    fn size(&self, _path: &str) -> u64 {
        0
    }
    /// Permission bits stat reports.
    fn mode(&self, _path: &str, node: Node) -> u16 {
        match node {
            Node::Dir => 0o555,
            Node::File => 0o666,
        }
    }
    /// `open(O_CREAT)` of a file that does not exist (9P Tcreate). `Ok`
    /// means the server accepted it: the writer gets a handle whose text is
    /// delivered to [`Tree::write`] at close, whether or not the file then
    /// exists (ollie-9p accepts a create anywhere and keeps nothing).
    fn create(&self, _path: &str) -> Result<(), i32> {
        Err(libc::EPERM)
    }
    /// `true` for files the server answers once per open, like ollie-9p's
    /// `*wait` and `fifo.out` (server.go `read`): only a read at offset 0
    /// asks [`Tree::read`]; a read at any later offset is end of file.
    fn read_once(&self, _path: &str) -> bool {
        false
    }
    /// `true` for a file opened without `FOPEN_DIRECT_IO`, the way many
    /// FUSE servers other than 9pfuse serve: reads may come from the
    /// kernel's page cache, which an unchanged size and mtime never
    /// invalidate on an open fd.
    fn page_cached(&self, _path: &str) -> bool {
        false
    }
}

/// A [`Tree`] mounted on a fresh temporary directory; unmounted on drop.
pub struct Mount {
    /// The FUSE session; dropping it ends the request loop.
    session: Option<fuser::BackgroundSession>,
    /// FUSE requests served so far, for idle-cost measurements.
    ops: Arc<AtomicU64>,
    /// The mount point, inside `_dir`.
    path: PathBuf,
    /// Holds the mount point's parent; removed after the unmount.
    _dir: tempfile::TempDir,
}

/// Why FUSE tests cannot run here, or `None` when they can.
pub fn fuse_unavailable() -> Option<String> {
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
    {
        return Some(format!("/dev/fuse cannot be opened ({e})"));
    }
    let on_path = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| dir.join("fusermount3").is_file())
    });
    if !on_path {
        return Some("fusermount3 is not installed (apt-get install fuse3)".into());
    }
    None
}

impl Mount {
    /// Mounts `tree` under a new temporary directory and waits until the
    /// kernel serves it.
    pub fn new(tree: Arc<dyn Tree>) -> Result<Mount, String> {
        let dir = tempfile::Builder::new()
            .prefix("reveille-fuse-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let path = dir.path().join("mnt");
        std::fs::create_dir(&path).map_err(|e| format!("mount point: {e}"))?;
        let ops = Arc::new(AtomicU64::new(0));
        let fs = Served {
            tree,
            ops: ops.clone(),
            inodes: Mutex::new(Inodes::default()),
            handles: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
        };
        let mut config = Config::default();
        // auto_unmount: fusermount3 unmounts if this process dies without
        // running Drop (a test aborted or killed), so no stale mount stays.
        config.mount_options = vec![
            MountOption::FSName("reveille-double".into()),
            MountOption::Subtype("9pfuse".into()),
            MountOption::AutoUnmount,
        ];
        config.acl = SessionACL::RootAndOwner;
        let session =
            fuser::spawn_mount(fs, &path, &config).map_err(|e| format!("mount {path:?}: {e}"))?;
        let mount = Mount {
            session: Some(session),
            ops,
            path,
            _dir: dir,
        };
        if !mount.mounted() {
            return Err(format!(
                "{:?} is not a FUSE mount after mounting",
                mount.path
            ));
        }
        Ok(mount)
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// FUSE requests served so far.
    pub fn ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    /// Whether the mount point is a FUSE mount right now.
    fn mounted(&self) -> bool {
        std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|info| {
            let want = self.path.to_string_lossy();
            info.lines()
                .any(|l| l.split(' ').nth(4) == Some(&want) && l.contains(" fuse."))
        })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        // A lazy unmount succeeds even while a client still holds a file
        // open (a daemon under test, a blocked statewait); the loop then
        // ends when the kernel closes the connection.
        if let Ok(c) = CString::new(self.path.as_os_str().as_bytes()) {
            // SAFETY: a valid NUL-terminated path; umount2 has no other
            // preconditions.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        drop(self.session.take());
    }
}

/// How long the kernel may cache attributes and entries: 9pfuse's default
/// `attrtimeout` and `entrytimeout`.
const TTL: Duration = Duration::from_secs(1);

/// Inode numbers for paths, assigned on first sight and never reused, so a
/// path renamed away (ollie `rn`) leaves a number that resolves to nothing.
#[derive(Default)]
struct Inodes {
    by_path: HashMap<String, u64>,
    by_ino: HashMap<u64, String>,
}

impl Inodes {
    fn ino(&mut self, path: &str) -> u64 {
        if path.is_empty() {
            return 1;
        }
        if let Some(&ino) = self.by_path.get(path) {
            return ino;
        }
        let ino = self.by_ino.len() as u64 + 2;
        self.by_path.insert(path.to_string(), ino);
        self.by_ino.insert(ino, path.to_string());
        ino
    }

    fn path(&self, ino: u64) -> Option<String> {
        if ino == 1 {
            return Some(String::new());
        }
        self.by_ino.get(&ino).cloned()
    }
}

/// One open file: what it was opened for and the text written so far.
struct Handle {
    path: String,
    writable: bool,
    written: Vec<u8>,
}

/// The [`Tree`] as a fuser filesystem.
struct Served {
    tree: Arc<dyn Tree>,
    ops: Arc<AtomicU64>,
    inodes: Mutex<Inodes>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_handle: AtomicU64,
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn errno(e: i32) -> Errno {
    Errno::from_i32(e)
}

impl Served {
    fn served(&self) {
        self.ops.fetch_add(1, Ordering::Relaxed);
    }

    fn path_of(&self, ino: INodeNo) -> Option<String> {
        self.inodes.lock().unwrap().path(ino.0)
    }

    /// The attributes of `path`, or `None` when it does not exist.
    fn attr(&self, path: &str) -> Option<FileAttr> {
        Some(self.attr_as(path, self.tree.node(path)?))
    }

    /// The attributes of `path` as a `node`.
    fn attr_as(&self, path: &str, node: Node) -> FileAttr {
        let ino = self.inodes.lock().unwrap().ino(path);
        let (kind, size) = match node {
            Node::Dir => (FileType::Directory, 0),
            Node::File => (FileType::RegularFile, self.tree.size(path)),
        };
        // Fixed times: ollie-9p reports 0 (the epoch) for synthetic files.
        let time = SystemTime::UNIX_EPOCH;
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: time,
            mtime: time,
            ctime: time,
            crtime: time,
            kind,
            perm: self.tree.mode(path, node),
            nlink: if node == Node::Dir { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Option<String> {
        Some(join(&self.path_of(parent)?, name.to_str()?))
    }

    fn open_handle(&self, path: String, writable: bool) -> u64 {
        let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
        let handle = Handle {
            path,
            writable,
            written: Vec::new(),
        };
        self.handles.lock().unwrap().insert(fh, handle);
        fh
    }

    fn remove_child(&self, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.served();
        let Some(path) = self.child(parent, name) else {
            return reply.error(Errno::ENOENT);
        };
        match self.tree.remove(&path) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }
}

impl Filesystem for Served {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.served();
        match self.child(parent, name).and_then(|p| self.attr(&p)) {
            Some(attr) => reply.entry(&TTL, &attr, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.served();
        match self.path_of(ino).and_then(|p| self.attr(&p)) {
            Some(attr) => reply.attr(&TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        self.served();
        let Some(path) = self.path_of(ino) else {
            return reply.error(Errno::ENOENT);
        };
        // 9pfuse `fusesetattr`: a truncate to 0 without an open file is an
        // open(OTRUNC) and a clunk, i.e. an empty write at close; anything
        // else is a wstat, which synthetic servers accept and ignore.
        if size == Some(0) && fh.is_none() {
            let _ = self.tree.write(&path, b"");
        }
        match self.attr(&path) {
            Some(attr) => reply.attr(&TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove_child(parent, name, reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove_child(parent, name, reply);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.served();
        let Some(path) = self.path_of(ino).filter(|p| self.tree.node(p).is_some()) else {
            return reply.error(Errno::ENOENT);
        };
        let writable = flags.0 & libc::O_ACCMODE != libc::O_RDONLY;
        let how = if self.tree.page_cached(&path) {
            FopenFlags::empty()
        } else {
            FopenFlags::FOPEN_DIRECT_IO
        };
        let fh = self.open_handle(path, writable);
        reply.opened(FileHandle(fh), how);
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        self.served();
        let Some(path) = self.child(parent, name) else {
            return reply.error(Errno::ENOENT);
        };
        if let Err(e) = self.tree.create(&path) {
            return reply.error(errno(e));
        }
        let attr = self.attr_as(&path, Node::File);
        let fh = self.open_handle(path, true);
        reply.created(
            &TTL,
            &attr,
            Generation(0),
            FileHandle(fh),
            FopenFlags::FOPEN_DIRECT_IO,
        );
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.served();
        let Some(path) = self
            .handles
            .lock()
            .unwrap()
            .get(&fh.0)
            .map(|h| h.path.clone())
        else {
            return reply.error(Errno::EBADF);
        };
        if offset > 0 && self.tree.read_once(&path) {
            return reply.data(&[]);
        }
        // Off the request loop: a read may block (statewait) and the
        // other requests must keep flowing, as they do through 9pfuse.
        let tree = self.tree.clone();
        std::thread::spawn(move || match tree.read(&path) {
            Ok(content) => {
                let start = (offset as usize).min(content.len());
                let end = (start + size as usize).min(content.len());
                reply.data(&content[start..end]);
            }
            Err(e) => reply.error(errno(e)),
        });
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
        self.served();
        let mut handles = self.handles.lock().unwrap();
        let Some(handle) = handles.get_mut(&fh.0) else {
            return reply.error(Errno::EBADF);
        };
        // ollie-9p `write`: accumulate at the offset; act at clunk.
        let end = offset as usize + data.len();
        if handle.written.len() < end {
            handle.written.resize(end, 0);
        }
        handle.written[offset as usize..end].copy_from_slice(data);
        reply.written(data.len() as u32);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // 9pfuse `fuseflush`: nothing.
        self.served();
        reply.ok();
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
        self.served();
        let handle = self.handles.lock().unwrap().remove(&fh.0);
        if let Some(handle) = handle.filter(|h| h.writable) {
            // The clunk: the server acts on the whole text now, on its own
            // thread (a clunk may block, and 9pfuse and the server both
            // answer each request on its own thread); its error is dropped,
            // as 9pfuse's `fuserelease` always replies 0.
            let tree = self.tree.clone();
            std::thread::spawn(move || {
                let _ = tree.write(&handle.path, &handle.written);
            });
        }
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.served();
        match self
            .path_of(ino)
            .filter(|p| self.tree.node(p) == Some(Node::Dir))
        {
            Some(path) => {
                let fh = self.open_handle(path, false);
                reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO);
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        self.served();
        let Some(dir) = self.path_of(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let mut entries = vec![
            (ino.0, FileType::Directory, ".".to_string()),
            (ino.0, FileType::Directory, "..".to_string()),
        ];
        for name in self.tree.list(&dir) {
            let path = join(&dir, &name);
            let kind = match self.tree.node(&path) {
                Some(Node::Dir) => FileType::Directory,
                Some(Node::File) => FileType::RegularFile,
                None => continue,
            };
            let child = self.inodes.lock().unwrap().ino(&path);
            entries.push((child, kind, name));
        }
        for (i, (child, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(child), i as u64 + 1, kind, &name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.served();
        self.handles.lock().unwrap().remove(&fh.0);
        reply.ok();
    }
}

/// The errno 9pfuse gives a 9P error string (plan9port
/// `src/cmd/9pfuse/errstr.c` `errstr2errno`): the first entry of its table
/// found in the message, case-insensitively, else `ERANGE` ("who knows - be
/// blatantly wrong").
pub fn errno_for(message: &str) -> i32 {
    const TABLE: &[(&str, i32)] = &[
        ("permitted", libc::EPERM),
        ("permission", libc::EACCES),
        ("access", libc::EACCES),
        ("exists", libc::EEXIST),
        ("exist", libc::ENOENT),
        ("no such", libc::ENOENT),
        ("not found", libc::ENOENT),
        ("not implemented", libc::ENOSYS),
        ("input/output", libc::EIO),
        ("timeout", libc::ETIMEDOUT),
        ("timed out", libc::ETIMEDOUT),
        ("i/o", libc::EIO),
        ("too long", libc::E2BIG),
        ("interrupt", libc::EINTR),
        ("bad file", libc::EBADF),
        (" fid ", libc::EBADF),
        ("temporar", libc::EAGAIN),
        ("memory", libc::ENOMEM),
        ("is a directory", libc::EISDIR),
        ("directory", libc::ENOTDIR),
        ("argument", libc::EINVAL),
        ("pipe", libc::EPIPE),
        ("in use", libc::EBUSY),
        ("busy", libc::EBUSY),
        ("illegal", libc::EINVAL),
        ("invalid", libc::EINVAL),
        ("read-only", libc::EROFS),
        ("read only", libc::EROFS),
        ("stale ", libc::ESTALE),
        ("proto", libc::EPROTO),
        ("entry", libc::ENOENT),
    ];
    let message = message.to_lowercase();
    TABLE
        .iter()
        .find(|(text, _)| message.contains(text))
        .map_or(libc::ERANGE, |&(_, e)| e)
}

//! The generic FUSE layer (`doubles::fuse`) on a tiny tree: content is served
//! per read (no page cache), a write reaches the tree once, at close, as the
//! whole text, and a blocking read does not stall other requests.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::doubles::fuse::{fuse_unavailable, Mount, Node, Tree};
use crate::util::wait_until;

/// `dir/` holding `note` (read/write) and `slow` (a read that blocks until
/// released); writes are recorded.
#[derive(Default)]
struct Notes {
    note: Mutex<Vec<u8>>,
    writes: Mutex<Vec<Vec<u8>>>,
    slow_open: Mutex<bool>,
    slow_started: Mutex<bool>,
}

impl Tree for Notes {
    fn node(&self, path: &str) -> Option<Node> {
        match path {
            "" | "dir" => Some(Node::Dir),
            "dir/note" | "dir/slow" => Some(Node::File),
            _ => None,
        }
    }
    fn list(&self, dir: &str) -> Vec<String> {
        match dir {
            "" => vec!["dir".into()],
            "dir" => vec!["note".into(), "slow".into()],
            _ => vec![],
        }
    }
    fn read(&self, path: &str) -> Result<Vec<u8>, i32> {
        match path {
            "dir/note" => Ok(self.note.lock().unwrap().clone()),
            "dir/slow" => {
                *self.slow_started.lock().unwrap() = true;
                let deadline = Instant::now() + Duration::from_secs(10);
                while !*self.slow_open.lock().unwrap() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(b"done\n".to_vec())
            }
            _ => Err(libc::ENOENT),
        }
    }
    fn write(&self, path: &str, text: &[u8]) -> Result<(), i32> {
        self.writes.lock().unwrap().push(text.to_vec());
        if path == "dir/note" {
            *self.note.lock().unwrap() = text.to_vec();
        }
        Ok(())
    }
    fn remove(&self, _path: &str) -> Result<(), i32> {
        Err(libc::EPERM)
    }
}

fn mounted() -> Option<(Arc<Notes>, Mount)> {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    let notes = Arc::new(Notes::default());
    let mount = Mount::new(notes.clone()).expect("mount");
    Some((notes, mount))
}

#[test]
fn content_changes_are_seen_at_once_and_writes_arrive_whole_at_close() {
    let Some((notes, mount)) = mounted() else {
        return;
    };
    let note = mount.path().join("dir/note");
    *notes.note.lock().unwrap() = b"first".to_vec();
    assert_eq!(std::fs::read(&note).unwrap(), b"first");
    // A server-side change is visible on the next read: no page cache.
    *notes.note.lock().unwrap() = b"second, longer".to_vec();
    assert_eq!(std::fs::read(&note).unwrap(), b"second, longer");

    {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new().write(true).open(&note).unwrap();
        file.write_all(b"hello ").unwrap();
        file.write_all(b"world").unwrap();
        assert!(
            notes.writes.lock().unwrap().is_empty(),
            "nothing reaches the tree before close"
        );
    }
    let writes = wait_until("the write at close", Duration::from_secs(5), || {
        let w = notes.writes.lock().unwrap().clone();
        (!w.is_empty()).then_some(w)
    });
    assert_eq!(writes, vec![b"hello world".to_vec()]);
    let names: Vec<_> = std::fs::read_dir(mount.path().join("dir"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["note", "slow"]);
    let meta = std::fs::metadata(&note).unwrap();
    assert_eq!(meta.modified().unwrap(), std::time::SystemTime::UNIX_EPOCH);
    assert!(mount.ops() > 0);
}

#[test]
fn a_blocking_read_does_not_stall_other_requests() {
    let Some((notes, mount)) = mounted() else {
        return;
    };
    let slow = mount.path().join("dir/slow");
    let reader = std::thread::spawn(move || std::fs::read(slow).unwrap());
    wait_until(
        "the slow read to be in flight",
        Duration::from_secs(5),
        || (*notes.slow_started.lock().unwrap()).then_some(()),
    );
    // While the slow read blocks, other requests are served.
    *notes.note.lock().unwrap() = b"meanwhile".to_vec();
    assert_eq!(
        std::fs::read(mount.path().join("dir/note")).unwrap(),
        b"meanwhile"
    );
    assert!(
        !reader.is_finished(),
        "the slow read returned before it was released"
    );
    *notes.slow_open.lock().unwrap() = true;
    assert_eq!(reader.join().unwrap(), b"done\n");
}

/// `plan.md`, served the way a FUSE server without direct I/O serves a
/// synthetic file: through the page cache, with a size and mtime that do
/// not move when the content does (both versions are the same length).
struct Cached {
    text: Mutex<&'static [u8]>,
}

impl Tree for Cached {
    fn node(&self, path: &str) -> Option<Node> {
        match path {
            "" => Some(Node::Dir),
            "plan.md" => Some(Node::File),
            _ => None,
        }
    }
    fn list(&self, _dir: &str) -> Vec<String> {
        vec!["plan.md".into()]
    }
    fn read(&self, _path: &str) -> Result<Vec<u8>, i32> {
        Ok(self.text.lock().unwrap().to_vec())
    }
    fn write(&self, _path: &str, _text: &[u8]) -> Result<(), i32> {
        Err(libc::EPERM)
    }
    fn remove(&self, _path: &str) -> Result<(), i32> {
        Err(libc::EPERM)
    }
    fn size(&self, _path: &str) -> u64 {
        self.text.lock().unwrap().len() as u64
    }
    fn page_cached(&self, _path: &str) -> bool {
        true
    }
}

/// Why reveille never holds a FUSE file open between reads: a held fd is
/// served from the page cache, which nothing invalidates while size and
/// mtime stay put — the second read of a changed file returns the old
/// content. Opened afresh, it is read as it is now.
#[test]
fn plan_files_on_fuse_are_read_afresh_never_through_a_held_fd() {
    use std::os::unix::fs::FileExt;
    use std::time::Duration;

    use reveille::core::input::FileRead;
    use reveille::shell::read::PlanFiles;

    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let tree = Arc::new(Cached {
        text: Mutex::new(b"version A\n"),
    });
    let mount = Mount::new(tree.clone()).expect("mount");
    let path = mount.path().join("plan.md");
    // The hazard is real on this mount: a held fd reads the old content.
    let held = std::fs::File::open(&path).unwrap();
    let mut buf = [0u8; 64];
    let n = held.read_at(&mut buf, 0).unwrap();
    assert_eq!(&buf[..n], b"version A\n");
    *tree.text.lock().unwrap() = b"version B\n";
    let n = held.read_at(&mut buf, 0).unwrap();
    assert_eq!(
        &buf[..n],
        b"version A\n",
        "the page cache served the held fd"
    );
    drop(held);

    *tree.text.lock().unwrap() = b"version A\n";
    let mut files = PlanFiles::default();
    let read = |files: &mut PlanFiles| match files.read(&path, 4096, Duration::ZERO).0 {
        FileRead::Bytes(b) => b,
        other => panic!("{other:?}"),
    };
    assert_eq!(read(&mut files), b"version A\n");
    *tree.text.lock().unwrap() = b"version B\n";
    assert_eq!(read(&mut files), b"version B\n");
    assert_eq!(files.held(), 0, "a FUSE file was held open");
}

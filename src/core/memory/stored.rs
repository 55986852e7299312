//! The memory as the state file holds it, and the migrations from older
//! versions.
//!
//! - 1: plans' and tasks' items in one `announced` map; 9beads mounts
//!   followed by name (`mount:<name>`).
//! - 2: 9beads sources (`9beads:<cwd>`) and the `adopt` record. What a
//!   version-1 memory holds under `mount:<name>` is adopted at run time by
//!   the project's 9beads source once `mtab` shows the project's mount
//!   ([`Record::Adopt`]), since only `mtab` knows the directory such a name
//!   stood for.
//! - 3: the plans' share (`plans`) and the tasks' share (`tasks`) apart.
//!   A version 1 or 2 `announced` map is split by each source's kind.
//!
//! Whatever the version, each source is put in the share its kind says,
//! so a hand-edited file cannot hide a source where no record reaches it.
//!
//! [`Record::Adopt`]: crate::core::record::Record::Adopt

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::announced::Announcements;
use super::children::Children;
use super::outboxes::Outboxes;
use super::plans::PlanMemory;
use super::position::Position;
use super::tasks::TaskMemory;
use super::Memory;
use crate::core::record::Cursor;
use crate::core::source::Source;

/// The state file as it is written now (borrowing the memory: a snapshot
/// of a large memory copies nothing).
#[derive(Serialize)]
struct Written<'a> {
    version: u32,
    plans: &'a PlanMemory,
    tasks: &'a TaskMemory,
    outbox: &'a Outboxes,
    next_seq: u64,
    cursor: Option<Cursor>,
    baselined: bool,
    #[serde(skip_serializing_if = "Children::is_empty")]
    children: &'a Children,
}

/// The state file as any version wrote it.
#[derive(Deserialize)]
struct Read {
    #[serde(default)]
    version: u32,
    /// Versions 1 and 2: plans' and tasks' items together.
    #[serde(default)]
    announced: Announcements,
    #[serde(default)]
    plans: Announcements,
    #[serde(default)]
    tasks: Announcements,
    #[serde(default)]
    outbox: Outboxes,
    #[serde(default)]
    next_seq: u64,
    #[serde(default)]
    cursor: Option<Cursor>,
    #[serde(default)]
    baselined: bool,
    #[serde(default)]
    children: Children,
}

impl From<Read> for Memory {
    fn from(read: Read) -> Memory {
        let mut all = read.plans;
        all.extend(read.tasks);
        all.extend(read.announced);
        let (plans, tasks) = all.split(Source::is_plan);
        Memory {
            version: read.version,
            plans: PlanMemory::new(plans),
            tasks: TaskMemory::new(tasks),
            outbox: read.outbox,
            children: read.children,
            position: Position {
                next_seq: read.next_seq,
                cursor: read.cursor,
                baselined: read.baselined,
            },
        }
    }
}

impl Serialize for Memory {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Written {
            version: self.version,
            plans: &self.plans,
            tasks: &self.tasks,
            outbox: &self.outbox,
            next_seq: self.position.next_seq,
            cursor: self.position.cursor,
            baselined: self.position.baselined,
            children: &self.children,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Memory {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Memory, D::Error> {
        Read::deserialize(d).map(Memory::from)
    }
}

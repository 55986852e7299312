//! One line of the tracker's event log: never panics, and every id and mount
//! name it accepts is safe as one path component.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reveille::core::session::check_name;
use reveille::core::tracker::{parse_event, TrackerEvent};

fuzz_target!(|data: &[u8]| {
    let Ok(event) = parse_event(data) else {
        return;
    };
    let names: Vec<&str> = match &event {
        TrackerEvent::Created { id, mount }
        | TrackerEvent::Completed { id, mount }
        | TrackerEvent::Failed { id, mount }
        | TrackerEvent::Deleted { id, mount }
        | TrackerEvent::Updated { id, mount }
        | TrackerEvent::Claimed { id, mount, .. }
        | TrackerEvent::Ready { id, mount, .. } => vec![id, mount],
        TrackerEvent::Mount { name, .. } | TrackerEvent::Umount { name } => vec![name],
        TrackerEvent::Unknown { .. } => vec![],
    };
    for name in names {
        assert!(check_name(name).is_ok(), "{name:?} accepted from {event:?}");
    }
});

//! The wall-clock time a person reads on the live view and in the
//! snapshot stream, in the local time zone (`localtime_r`, which follows
//! `TZ` and `/etc/localtime` as `date` does).

use std::time::SystemTime;

/// Local time broken down, or `None` when the C library cannot say.
fn local(t: SystemTime) -> Option<libc::tm> {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    let secs = libc::time_t::try_from(secs).ok()?;
    // SAFETY: `tm` is plain data the call fills in; both pointers are valid
    // for the call, and the reentrant variant keeps no static state.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&secs, &mut tm).is_null() };
    ok.then_some(tm)
}

/// `09:51:10`.
pub fn time_of_day(t: SystemTime) -> String {
    match local(t) {
        Some(tm) => format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec),
        None => "--:--:--".to_string(),
    }
}

/// `2026-11-30 09:51:10 +0100`.
pub fn date_time(t: SystemTime) -> String {
    let Some(tm) = local(t) else {
        return "unknown time".to_string();
    };
    let offset = tm.tm_gmtoff / 60;
    let sign = if offset < 0 { '-' } else { '+' };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} {sign}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        offset.abs() / 60,
        offset.abs() % 60
    )
}

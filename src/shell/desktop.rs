//! Desktop notifications: the freedesktop Notifications API
//! (`org.freedesktop.Notifications`) on the user's D-Bus session bus, the
//! way a person is told that an agent waits for them when they are not
//! looking at its terminal (SPEC §12).
//!
//! Only what reveille needs of the API: show a notification (or replace
//! one shown before, so a wait that changes what it waits for is one
//! notification, not a stack of them) and close it when the wait is over.
//! Every call is blocking with a bound ([`CALL_TIMEOUT`]): the notifier runs
//! on a thread of its own, never on the event loop, and a notification
//! server that hangs costs that thread a few seconds, never a delivery.

use std::collections::HashMap;
use std::time::Duration;

use zbus::blocking::Connection;
use zbus::zvariant::Value;

use crate::core::effect::{Notice, NoticeEvent};

/// How long one call to the notification server may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The application name notifications carry (servers group and filter by it).
pub const APP_NAME: &str = "reveille";

/// The freedesktop Notifications interface, the two methods reveille calls.
#[zbus::proxy(
    interface = "org.freedesktop.Notifications",
    default_service = "org.freedesktop.Notifications",
    default_path = "/org/freedesktop/Notifications",
    gen_async = false,
    gen_blocking = true
)]
trait Notifications {
    /// Shows a notification (replacing `replaces_id` when not 0) and
    /// returns its id.
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        app_name: &str,
        replaces_id: u32,
        app_icon: &str,
        summary: &str,
        body: &str,
        actions: &[&str],
        hints: HashMap<&str, Value<'_>>,
        expire_timeout: i32,
    ) -> zbus::Result<u32>;

    /// Closes a notification shown before (no error if it is gone already).
    fn close_notification(&self, id: u32) -> zbus::Result<()>;
}

/// How pressing a notification is: a person must act (a wait), or it is
/// news (resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    Normal,
    Critical,
}

/// A connection to the session bus's notification server.
pub struct Desktop {
    proxy: NotificationsProxy<'static>,
}

impl Desktop {
    /// Connects to the user's session bus (`DBUS_SESSION_BUS_ADDRESS`, else
    /// `$XDG_RUNTIME_DIR/bus`). Fails, in words, when there is no bus or no
    /// notification server on it.
    pub fn connect() -> Result<Desktop, String> {
        let conn = zbus::blocking::connection::Builder::session()
            .and_then(|b| b.method_timeout(CALL_TIMEOUT).build())
            .map_err(|e| format!("no D-Bus session bus: {e}"))?;
        Desktop::on(conn)
    }

    /// Connects to the bus at `address` (a D-Bus address, `unix:path=…`).
    pub fn connect_at(address: &str) -> Result<Desktop, String> {
        let conn = zbus::blocking::connection::Builder::address(address)
            .and_then(|b| b.method_timeout(CALL_TIMEOUT).build())
            .map_err(|e| format!("cannot reach the D-Bus bus at {address}: {e}"))?;
        Desktop::on(conn)
    }

    fn on(conn: Connection) -> Result<Desktop, String> {
        let proxy = NotificationsProxy::new(&conn)
            .map_err(|e| format!("the session bus has no notification service: {e}"))?;
        Ok(Desktop { proxy })
    }

    /// Whether a session bus can be looked for at all: `auto` notifies only
    /// when there is one (a daemon under a user manager without a bus, or
    /// on a server, says nothing about a missing desktop).
    pub fn bus_present() -> bool {
        if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some_and(|a| !a.is_empty()) {
            return true;
        }
        std::env::var_os("XDG_RUNTIME_DIR")
            .map(|d| std::path::Path::new(&d).join("bus"))
            .is_some_and(|bus| bus.exists())
    }

    /// Shows a notification, replacing `replaces` (0: a new one); returns
    /// its id. A critical one stays until it is closed.
    pub fn show(
        &self,
        replaces: u32,
        summary: &str,
        body: &str,
        urgency: Urgency,
    ) -> Result<u32, String> {
        let (level, expire) = match urgency {
            Urgency::Normal => (1u8, -1),
            Urgency::Critical => (2u8, 0),
        };
        let hints = HashMap::from([
            ("urgency", Value::U8(level)),
            ("desktop-entry", Value::Str(APP_NAME.into())),
        ]);
        self.proxy
            .notify(APP_NAME, replaces, "", summary, body, &[], hints, expire)
            .map_err(|e| format!("the notification server refused it: {e}"))
    }

    /// Closes a notification shown before.
    pub fn close(&self, id: u32) -> Result<(), String> {
        self.proxy
            .close_notification(id)
            .map_err(|e| format!("the notification server did not close it: {e}"))
    }
}

/// One notice as the desktop shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub event: NoticeEvent,
    pub session: String,
    pub summary: String,
    pub body: String,
}

impl Shown {
    /// `notice` of project `project`, for the desktop: the project named
    /// in the summary, since one person may run several.
    pub fn of(project: &str, notice: &Notice) -> Shown {
        Shown {
            event: notice.event,
            session: notice.session.clone(),
            summary: format!("{project}: {}", notice.summary),
            body: notice.body.clone(),
        }
    }
}

/// The desktop side of telling the person: a wait for a person is one
/// notification per session, shown until the wait ends and then
/// withdrawn (a person who already answered at the terminal is not left
/// with a stale alarm); gave up and stuck are shown as news. Connects at
/// the first notice and again after a failure; a bus or server that is
/// not there is said once per streak, at warning level.
#[derive(Default)]
pub struct Notifier {
    desktop: Option<Desktop>,
    /// The notification shown for each session's current wait.
    shown: HashMap<String, u32>,
    /// A failure was said and nothing has worked since.
    failing: bool,
}

impl Notifier {
    pub fn tell(&mut self, n: &Shown) {
        match self.try_tell(n) {
            Ok(()) => self.failing = false,
            Err(why) => {
                // The connection may be what failed: a new one next time.
                self.desktop = None;
                if !std::mem::replace(&mut self.failing, true) {
                    tracing::warn!(
                        SESSION = %n.session,
                        "desktop notification not shown ({}): {why}",
                        n.event.name()
                    );
                }
            }
        }
    }

    fn try_tell(&mut self, n: &Shown) -> Result<(), String> {
        if self.desktop.is_none() {
            self.desktop = Some(Desktop::connect()?);
        }
        let Some(desktop) = &self.desktop else {
            return Ok(());
        };
        match n.event {
            NoticeEvent::Waiting => {
                let replaces = self.shown.get(&n.session).copied().unwrap_or(0);
                let id = desktop.show(replaces, &n.summary, &n.body, Urgency::Critical)?;
                self.shown.insert(n.session.clone(), id);
            }
            NoticeEvent::Resolved => {
                if let Some(id) = self.shown.remove(&n.session) {
                    desktop.close(id)?;
                }
            }
            NoticeEvent::GaveUp | NoticeEvent::Stuck => {
                desktop.show(0, &n.summary, &n.body, Urgency::Normal)?;
            }
        }
        Ok(())
    }
}

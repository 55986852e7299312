//! Desktop notifications (`shell::desktop`) against a real notification
//! service: dunst on a private D-Bus session bus, as a person's desktop
//! runs it.

use std::time::Duration;

use reveille::shell::desktop::{Desktop, Urgency};

use crate::util::desktop::NotificationServer;
use crate::util::wait_until;

const T: Duration = Duration::from_secs(10);

/// A notification shown is on the screen until it is closed, then in the
/// server's history with reveille's name, summary and body; one shown
/// again over it replaces it rather than stacking a second.
#[test]
fn a_notification_is_shown_replaced_and_closed_on_a_real_server() {
    let Some(server) = NotificationServer::start_or_skip() else {
        return;
    };
    let desktop = Desktop::connect_at(&server.bus).expect("connect to the private bus");
    let id = desktop
        .show(
            0,
            "agent waits for you",
            "approve `sed -i s/a/b/ f`",
            Urgency::Critical,
        )
        .expect("shown");
    assert_ne!(id, 0);
    wait_until("the notification on the screen", T, || {
        (server.displayed() == 1).then_some(())
    });
    let again = desktop
        .show(
            id,
            "agent waits for you",
            "approve `rm -r build`",
            Urgency::Critical,
        )
        .expect("replaced");
    assert_eq!(again, id, "a replacement keeps its id");
    assert_eq!(server.displayed(), 1, "replaced, not stacked");
    desktop.close(id).expect("closed");
    let history = wait_until("the notification closed", T, || {
        let h = server.history();
        (server.displayed() == 0 && !h.is_empty()).then_some(h)
    });
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0].app, "reveille");
    assert_eq!(history[0].summary, "agent waits for you");
    assert_eq!(history[0].body, "approve `rm -r build`");
}

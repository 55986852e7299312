//! A prompt that waits for a session reveille cannot reach (absent, no
//! such session on the agent's server, nobody reading): `why` says why it
//! waits, in words — not only that it is pending — and so do `status` and
//! the journal (above debug level).

use crate::conformance::{status_of, Kind, TICKING};
use crate::util::plans::Step;
use crate::util::try_wait_until;

pub fn run<K: Kind>() {
    let Some(k) = K::start(TICKING, &|_| {}) else {
        return;
    };
    let absent = k.absent();
    let extra = format!("<!-- session: {absent} -->\n");
    let plan = k.plan("unreachable", &[Step::new("Wait for it")], &extra);
    let plan = plan.display().to_string();
    let pending = format!("pending in the outbox of session {absent} (prompt ");
    let mut said = String::new();
    let reason = try_wait_until(K::T, || {
        let out = k.project().run(&["why", &plan]);
        said = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = said.lines().find(|l| l.contains(&pending))?;
        let (_, reason) = line.split_once("): ")?;
        (!reason.trim().is_empty()).then(|| reason.to_string())
    });
    let Some(reason) = reason else {
        panic!(
            "{}: `why` never said why s1 waits for {absent}:\n{said}\n{}",
            K::NAME,
            k.daemon().log()
        );
    };
    eprintln!("{}: why says s1 waits because {reason}", K::NAME);
    let status = status_of(k.project(), &absent);
    let said = [&status["absent"], &status["last_delivery"]["outcome"]];
    assert!(
        said.iter()
            .any(|v| v.as_str().is_some_and(|s| !s.is_empty())),
        "{}: status says nothing of why {absent} has s1 waiting: {status:#}",
        K::NAME
    );
    let log = k.daemon().log();
    // The session named as the subject of the line, in any of the ways
    // the journal's lines name one.
    let named = [
        format!("session {absent}"),
        format!("session=\"{absent}\""),
        format!("SESSION={absent}"),
    ];
    let told = log.lines().find(|l| {
        !l.contains(" DEBUG ")
            && !l.contains(" TRACE ")
            && named.iter().any(|n| l.contains(n.as_str()))
            && !l.contains("announced s1")
    });
    let Some(told) = told else {
        panic!(
            "{}: the journal says nothing above debug level of s1 waiting for {absent}\n{log}",
            K::NAME
        );
    };
    eprintln!("{}: the journal says {told}", K::NAME);
}

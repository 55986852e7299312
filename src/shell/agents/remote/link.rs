//! Why an agent's server cannot be reached, in words — the one place
//! these reasons are worded — and the rule that says each once per
//! episode: a server retried every quarter second while it is down must
//! not fill the journal, and a person reading it must find the address
//! and the error, not "unreachable" alone.

use std::fmt;

/// Which program's server it is: its name and its kind of secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    Opencode,
    Codex,
}

impl Program {
    /// What it is let in with.
    fn secret(self) -> &'static str {
        match self {
            Program::Opencode => "password",
            Program::Codex => "token",
        }
    }

    /// Where reveille takes that from.
    fn key(self) -> &'static str {
        match self {
            Program::Opencode => "opencode.password_file",
            Program::Codex => "codex.token_file",
        }
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Program::Opencode => "opencode server",
            Program::Codex => "codex app-server",
        })
    }
}

/// A server that did not answer, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkDown {
    pub server: Program,
    /// Its address as configured (never with credentials in it).
    pub address: String,
    pub why: Why,
}

/// The kinds of "not reached", each its own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// No connection: refused, no route, no such host (the system's words).
    NoConnection(String),
    /// The connection or an answer took too long (what, and how long).
    TimedOut(String),
    /// The TLS handshake failed (already in words, see `tls::describe`).
    Tls(String),
    /// The server refused the credentials (401), or asked for some and
    /// reveille has none.
    Credentials { sent: bool },
    /// The connection broke after it was made (the error).
    Cut(String),
}

impl Why {
    /// Whether two reasons are the same episode's. The network's own
    /// (refused, timed out, cut) are one: a link cut is followed by
    /// refused or timed-out retries, and their wording varies from one to
    /// the next. TLS and credentials each ask a person for something else.
    fn same_kind(&self, other: &Why) -> bool {
        let class = |w: &Why| match w {
            Why::NoConnection(_) | Why::TimedOut(_) | Why::Cut(_) => 0,
            Why::Tls(_) => 1,
            Why::Credentials { .. } => 2,
        };
        class(self) == class(other)
    }
}

impl fmt::Display for LinkDown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LinkDown {
            server, address, ..
        } = self;
        match &self.why {
            Why::NoConnection(e) => write!(f, "{server} not reachable at {address} ({e})"),
            Why::TimedOut(e) => write!(f, "{server} not reachable at {address} ({e})"),
            Why::Tls(e) => write!(f, "{server} not reachable at {address} ({e})"),
            Why::Credentials { sent: true } => write!(
                f,
                "the {server} at {address} refused the credentials (401): the {} reveille sent ({}) is not the server's",
                server.secret(),
                server.key()
            ),
            Why::Credentials { sent: false } => write!(
                f,
                "the {server} at {address} refused the credentials (401): it asks for a {} and reveille has none (set {}, or give the unit the credential)",
                server.secret(),
                server.key()
            ),
            Why::Cut(e) => write!(f, "the connection to the {server} at {address} broke ({e})"),
        }
    }
}

/// An episode of a server being down: said when it begins, said again only
/// if the reason changes kind, and its end said once.
#[derive(Debug, Default)]
pub struct Episode {
    down: Option<Why>,
}

impl Episode {
    /// The server did not answer: what to say, if anything.
    pub fn down(&mut self, link: &LinkDown) -> Option<String> {
        let news = !self.down.as_ref().is_some_and(|w| w.same_kind(&link.why));
        self.down = Some(link.why.clone());
        news.then(|| link.to_string())
    }

    /// It answered: what to say, if it had been down.
    pub fn up(&mut self, server: Program, address: &str) -> Option<String> {
        self.down
            .take()
            .map(|_| format!("the {server} at {address} is reachable again"))
    }

    /// Whether the last word was refused credentials: worth no quick retry.
    pub fn refused_credentials(&self) -> bool {
        matches!(self.down, Some(Why::Credentials { .. }))
    }

    pub fn is_down(&self) -> bool {
        self.down.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(why: Why) -> LinkDown {
        LinkDown {
            server: Program::Opencode,
            address: "https://10.0.0.5:4096".into(),
            why,
        }
    }

    #[test]
    fn an_episode_is_said_once_and_again_only_when_its_reason_changes_kind() {
        let mut e = Episode::default();
        let refused = link(Why::NoConnection(
            "Connection refused (os error 111)".into(),
        ));
        let said = e.down(&refused).unwrap();
        assert_eq!(
            said,
            "opencode server not reachable at https://10.0.0.5:4096 (Connection refused (os error 111))"
        );
        assert_eq!(e.down(&refused), None);
        assert_eq!(
            e.down(&link(Why::NoConnection("No route to host".into()))),
            None
        );
        assert_eq!(e.down(&link(Why::TimedOut("connect".into()))), None);
        assert_eq!(e.down(&link(Why::Cut("reset".into()))), None);
        let said = e.down(&link(Why::Credentials { sent: true })).unwrap();
        assert!(said.contains("refused the credentials"), "{said}");
        assert!(e.refused_credentials());
        assert_eq!(e.down(&link(Why::Credentials { sent: true })), None);
        assert!(e.up(Program::Opencode, "x").is_some());
        assert_eq!(e.up(Program::Opencode, "x"), None);
        assert!(e.down(&refused).is_some(), "a new episode is said again");
    }
}

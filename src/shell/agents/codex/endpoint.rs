//! Where the Codex app-server that owns the threads listens, and the
//! socket to it.
//!
//! The interactive `codex` TUI runs its threads in a local app-server
//! daemon listening at `$CODEX_HOME/app-server-control/app-server-control.sock`
//! (a symlink into `/tmp/codex-daemon-<uid>/`, removed when the daemon
//! stops); `codex app-server --listen unix://PATH` or `ws://HOST:PORT` is
//! an explicit one (`codex.endpoint`). Either way it is a WebSocket — over
//! the unix socket, over TCP, or over TLS over TCP (`wss://`, a server
//! behind a TLS-terminating proxy, verified against the system's roots or
//! `codex.ca_file`).

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use crate::config::CodexSettings;
use crate::shell::agents::remote::address;

/// How long a TCP connect may take before the server counts as down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// An app-server address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A unix socket (the TUI's daemon, or `--listen unix://PATH`).
    Unix(PathBuf),
    /// `ws://HOST:PORT[/PATH]` or `wss://…`: `addr` is `HOST:PORT`, `url`
    /// the whole, `tls` whether it is `wss://`.
    Tcp {
        addr: String,
        url: String,
        tls: bool,
    },
}

impl Endpoint {
    /// The endpoint the settings name: `codex.endpoint` when set, else the
    /// daemon's control socket under `codex.home`. (`unix://` alone is
    /// Codex's own spelling of that default socket.)
    pub fn of(settings: &CodexSettings) -> Endpoint {
        let default = || {
            Endpoint::Unix(
                settings
                    .home
                    .join("app-server-control/app-server-control.sock"),
            )
        };
        match settings.endpoint.as_deref() {
            None | Some("unix://") => default(),
            Some(raw) => match raw.strip_prefix("unix://") {
                Some(path) => Endpoint::Unix(PathBuf::from(path)),
                None => {
                    let tls = raw.starts_with("wss://");
                    let rest = raw.split_once("://").map_or(raw, |(_, rest)| rest);
                    let authority = rest.split('/').next().unwrap_or(rest);
                    let has_port = match authority.strip_prefix('[') {
                        Some(v6) => v6.contains("]:"),
                        None => authority.contains(':'),
                    };
                    let addr = match (has_port, tls) {
                        (true, _) => authority.to_string(),
                        (false, true) => format!("{authority}:443"),
                        (false, false) => format!("{authority}:80"),
                    };
                    Endpoint::Tcp {
                        addr,
                        url: raw.to_string(),
                        tls,
                    }
                }
            },
        }
    }

    /// The URL of the WebSocket handshake (a unix socket has no host;
    /// the server ignores it).
    pub fn url(&self) -> String {
        match self {
            Endpoint::Unix(_) => "ws://localhost/".into(),
            Endpoint::Tcp { url, .. } if url.matches('/').count() > 2 => url.clone(),
            Endpoint::Tcp { url, .. } => format!("{url}/"),
        }
    }

    /// Connect, blocking for at most a couple of seconds; a `wss://`
    /// endpoint is wrapped in TLS (`tls`), whose handshake happens with
    /// the WebSocket's.
    pub fn connect(&self, tls: Option<&Arc<ClientConfig>>) -> io::Result<Socket> {
        match self {
            Endpoint::Unix(path) => UnixStream::connect(path).map(Socket::Unix),
            Endpoint::Tcp {
                addr,
                url,
                tls: wss,
            } => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
                for a in addr.to_socket_addrs()? {
                    match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            return match (wss, tls) {
                                (false, _) => Ok(Socket::Tcp(s)),
                                (true, Some(config)) => tls_over(s, url, config),
                                (true, None) => Err(io::Error::other("wss:// without TLS roots")),
                            };
                        }
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
        }
    }
}

/// TLS over `s` to the host of `url`.
fn tls_over(s: TcpStream, url: &str, config: &Arc<ClientConfig>) -> io::Result<Socket> {
    let host = address::host(url).unwrap_or_default().to_string();
    let name =
        ServerName::try_from(host).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let conn = ClientConnection::new(config.clone(), name).map_err(io::Error::other)?;
    Ok(Socket::Tls(Box::new(StreamOwned::new(conn, s))))
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "{}", path.display()),
            Endpoint::Tcp { url, .. } => f.write_str(url),
        }
    }
}

/// A connected socket to an app-server.
#[derive(Debug)]
pub enum Socket {
    Unix(UnixStream),
    Tcp(TcpStream),
    /// TLS over TCP: rustls keeps decrypted bytes of its own, but the
    /// worker reads until `WouldBlock` before it polls, so none wait unseen.
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Socket {
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Socket::Unix(s) => s.set_nonblocking(on),
            Socket::Tcp(s) => s.set_nonblocking(on),
            Socket::Tls(s) => s.sock.set_nonblocking(on),
        }
    }

    /// Bound the blocking handshake.
    pub fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Unix(s) => s.set_read_timeout(t).and(s.set_write_timeout(t)),
            Socket::Tcp(s) => s.set_read_timeout(t).and(s.set_write_timeout(t)),
            Socket::Tls(s) => s.sock.set_read_timeout(t).and(s.sock.set_write_timeout(t)),
        }
    }
}

impl AsRawFd for Socket {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Socket::Unix(s) => s.as_raw_fd(),
            Socket::Tcp(s) => s.as_raw_fd(),
            Socket::Tls(s) => s.sock.as_raw_fd(),
        }
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Unix(s) => s.read(buf),
            Socket::Tcp(s) => s.read(buf),
            Socket::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Unix(s) => s.write(buf),
            Socket::Tcp(s) => s.write(buf),
            Socket::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Socket::Unix(s) => s.flush(),
            Socket::Tcp(s) => s.flush(),
            Socket::Tls(s) => s.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(endpoint: Option<&str>) -> CodexSettings {
        CodexSettings {
            home: PathBuf::from("/h/.codex"),
            endpoint: endpoint.map(str::to_string),
            token: None,
            ca_file: None,
        }
    }

    #[test]
    fn the_daemon_socket_is_under_codex_home_unless_an_endpoint_is_given() {
        let daemon = Endpoint::Unix("/h/.codex/app-server-control/app-server-control.sock".into());
        assert_eq!(Endpoint::of(&settings(None)), daemon);
        assert_eq!(Endpoint::of(&settings(Some("unix://"))), daemon);
        assert_eq!(
            Endpoint::of(&settings(Some("unix:///run/cx.sock"))),
            Endpoint::Unix("/run/cx.sock".into())
        );
        let ws = Endpoint::of(&settings(Some("ws://127.0.0.1:4500")));
        assert_eq!(
            ws,
            Endpoint::Tcp {
                addr: "127.0.0.1:4500".into(),
                url: "ws://127.0.0.1:4500".into(),
                tls: false,
            }
        );
        assert_eq!(ws.url(), "ws://127.0.0.1:4500/");
        assert_eq!(
            Endpoint::of(&settings(Some("ws://h:1/rpc"))).url(),
            "ws://h:1/rpc"
        );
        assert_eq!(
            Endpoint::of(&settings(Some("wss://cx.example.org/rpc"))),
            Endpoint::Tcp {
                addr: "cx.example.org:443".into(),
                url: "wss://cx.example.org/rpc".into(),
                tls: true,
            }
        );
    }
}

//! TLS for tests of servers on "another machine": a certificate authority
//! the test makes with `openssl`, a certificate it signs for an address,
//! and a TLS-terminating proxy (`socat OPENSSL-LISTEN`) in front of a
//! plain server — how opencode's server and a Codex app-server, which
//! speak no TLS themselves, are put on a network. Also a plain TCP proxy
//! that counts the connections it accepts (how often a client retried),
//! and can be cut and healed. A [`Route`] puts either on another address
//! or runs it under a prefix (`ip netns exec NS`) for tests across network
//! namespaces.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::wait_until;

/// How long socat may take to listen.
const LISTEN: Duration = Duration::from_secs(10);

/// Why TLS tests cannot run here, if they cannot.
pub fn unavailable() -> Option<String> {
    for (tool, arg) in [("openssl", "version"), ("socat", "-V")] {
        let ran = Command::new(tool)
            .arg(arg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if ran.is_err() {
            return Some(format!("{tool} is not installed"));
        }
    }
    None
}

fn openssl(args: &[&str], dir: &Path) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A certificate authority of the test's own, in `dir`.
pub struct Ca {
    dir: PathBuf,
    /// Its certificate (PEM): what a client's `ca_file` names.
    pub cert: PathBuf,
    key: PathBuf,
}

/// A server certificate and its key (PEM).
pub struct Issued {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Ca {
    /// A new CA named `name` in `dir` (which must exist).
    pub fn new(dir: &Path, name: &str) -> Ca {
        let (cert, key) = (
            dir.join(format!("{name}.pem")),
            dir.join(format!("{name}.key")),
        );
        openssl(
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/CN={name}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
                "-keyout",
                key.to_str().unwrap(),
                "-out",
                cert.to_str().unwrap(),
            ],
            dir,
        );
        Ca {
            dir: dir.to_path_buf(),
            cert,
            key,
        }
    }

    /// A certificate for `ip` (its subject alternative name), signed by
    /// this CA.
    pub fn issue(&self, ip: &str) -> Issued {
        let base = self.dir.join(format!("server-{ip}"));
        let (key, csr, cert, ext) = (
            base.with_extension("key"),
            base.with_extension("csr"),
            base.with_extension("pem"),
            base.with_extension("ext"),
        );
        std::fs::write(
            &ext,
            format!(
                "subjectAltName=IP:{ip}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
            ),
        )
        .unwrap();
        openssl(
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                &format!("/CN={ip}"),
                "-keyout",
                key.to_str().unwrap(),
                "-out",
                csr.to_str().unwrap(),
            ],
            &self.dir,
        );
        openssl(
            &[
                "x509",
                "-req",
                "-in",
                csr.to_str().unwrap(),
                "-CA",
                self.cert.to_str().unwrap(),
                "-CAkey",
                self.key.to_str().unwrap(),
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                ext.to_str().unwrap(),
                "-out",
                cert.to_str().unwrap(),
            ],
            &self.dir,
        );
        Issued { cert, key }
    }
}

/// A socat proxy to a plain TCP server, killed on drop. It forks a child
/// per connection, all in its own process group: [`Proxy::cut`] ends every
/// connection at once, as a link cut does, and [`Proxy::heal`] listens on
/// the same port again.
pub struct Proxy {
    child: Option<Child>,
    pub port: u16,
    log: PathBuf,
    /// socat's two addresses.
    listen: String,
    connect: String,
    /// What socat is run under (e.g. `ip netns exec NS`), if anything.
    prefix: Vec<String>,
}

/// Where a proxy listens and what it forwards to.
pub struct Route<'a> {
    /// The address it listens on (`127.0.0.1`, or a namespace's).
    pub bind: &'a str,
    pub port: u16,
    /// `HOST:PORT` of the plain server behind it.
    pub target: String,
    /// A command socat is run under (`["ip", "netns", "exec", "far"]`).
    pub prefix: &'a [&'a str],
}

impl Route<'_> {
    /// On a free port of 127.0.0.1 to `127.0.0.1:<target>`.
    pub fn local(target: u16) -> Route<'static> {
        Route {
            bind: "127.0.0.1",
            port: free_port(),
            target: format!("127.0.0.1:{target}"),
            prefix: &[],
        }
    }
}

impl Proxy {
    /// TLS on the outside with `issued`, plain TCP to `target` inside:
    /// a TLS-terminating proxy (clients are not asked for certificates).
    pub fn tls(issued: &Issued, target: u16, log_dir: &Path) -> Proxy {
        Proxy::tls_on(issued, Route::local(target), log_dir)
    }

    /// The same on any route (another namespace's address, say).
    pub fn tls_on(issued: &Issued, route: Route, log_dir: &Path) -> Proxy {
        let listen = format!(
            "OPENSSL-LISTEN:{},bind={},reuseaddr,fork,cert={},key={},verify=0",
            route.port,
            route.bind,
            issued.cert.display(),
            issued.key.display()
        );
        Proxy::start(listen, route, log_dir)
    }

    /// Plain TCP both sides; it logs every connection it accepts.
    pub fn tcp(target: u16, log_dir: &Path) -> Proxy {
        Proxy::tcp_on(Route::local(target), log_dir)
    }

    /// The same on any route.
    pub fn tcp_on(route: Route, log_dir: &Path) -> Proxy {
        let listen = format!(
            "TCP-LISTEN:{},bind={},reuseaddr,fork",
            route.port, route.bind
        );
        Proxy::start(listen, route, log_dir)
    }

    fn start(listen: String, route: Route, log_dir: &Path) -> Proxy {
        let mut proxy = Proxy {
            child: None,
            port: route.port,
            log: log_dir.join(format!("socat-{}-{}.log", route.bind, route.port)),
            listen,
            connect: format!("TCP:{}", route.target),
            prefix: route.prefix.iter().map(|s| s.to_string()).collect(),
        };
        proxy.heal();
        proxy
    }

    /// Listen again (after [`Proxy::cut`]).
    pub fn heal(&mut self) {
        use std::os::unix::process::CommandExt;
        assert!(self.child.is_none(), "the proxy is running");
        let before = self.listened();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let mut argv: Vec<&str> = self.prefix.iter().map(String::as_str).collect();
        argv.extend(["socat", "-d", "-d", &self.listen, &self.connect]);
        let child = Command::new(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start socat");
        self.child = Some(child);
        wait_until("socat to listen", LISTEN, || {
            (self.listened() > before).then_some(())
        });
    }

    /// End the proxy and every connection through it.
    pub fn cut(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
        }
    }

    /// How many times it has said it listens (once per start, and again
    /// after each fork).
    fn listened(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches("listening on")
            .count()
    }

    /// How many connections it has accepted.
    pub fn accepted(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches("accepting connection from")
            .count()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
    }
}

/// A port of 127.0.0.1 free now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A secret file of mode `mode` holding `text`.
pub fn secret_file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("{text}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

use super::*;

#[test]
fn an_event_stream_that_never_begins_is_given_up_after_the_head_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts, reads, and holds the connection without a word.
    let held = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1024];
        let _ = conn.read(&mut buf);
        conn
    });
    let s = Server::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let Err(err) = s.events() else {
        panic!("an answer from a server that said nothing")
    };
    assert!(err.to_string().contains("no answer within 3s"), "{err}");
    drop(held.join());
}

#[test]
fn urls_are_read_and_bad_ones_named() {
    let s = Server::parse("http://127.0.0.1:4096").unwrap();
    assert_eq!(
        (s.host.as_str(), s.port, s.base.as_str()),
        ("127.0.0.1", 4096, "http://127.0.0.1:4096")
    );
    assert!(s.is_local());
    let s = Server::parse("http://localhost/oc/").unwrap();
    assert_eq!(
        (s.host.as_str(), s.port, s.base.as_str()),
        ("localhost", 80, "http://localhost/oc")
    );
    let s = Server::parse("http://[::1]:5000").unwrap();
    assert_eq!((s.host.as_str(), s.port), ("::1", 5000));
    let s = Server::parse("http://[::1]").unwrap();
    assert_eq!((s.host.as_str(), s.port), ("::1", 80));
    assert!(Server::parse("ftp://x:1")
        .unwrap_err()
        .contains("not an http:// or https://"));
    assert!(Server::parse("http://x:port").unwrap_err().contains("port"));
    assert!(Server::parse("http://:1").unwrap_err().contains("no host"));
    assert!(!Server::parse("http://example.org:1").unwrap().is_local());
}

#[test]
fn https_takes_its_roots_from_the_ca_file_when_one_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let access = Access {
        ca_file: Some(dir.path().join("missing.pem")),
        ..Access::default()
    };
    let err = Server::new("https://10.0.0.5:4096", &access).unwrap_err();
    assert!(err.contains("missing.pem"), "{err}");
    // Plain http never reads it.
    assert!(Server::new("http://10.0.0.5:4096", &access).is_ok());
}

#[test]
fn base64_pads_as_the_standard_says() {
    assert_eq!(base64(b"opencode:pw"), "b3BlbmNvZGU6cHc=");
    assert_eq!(base64(b"ab"), "YWI=");
    assert_eq!(base64(b"abc"), "YWJj");
    assert_eq!(base64(b"a"), "YQ==");
}

#[test]
fn a_server_not_running_is_unreachable_by_name() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let s = Server::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    match s.call("GET", "/session/status", None) {
        Err(Failure::Unreachable(link)) => {
            let why = link.to_string();
            assert!(
                why.starts_with(&format!(
                    "opencode server not reachable at http://127.0.0.1:{port}"
                )),
                "{why}"
            );
            assert!(why.contains("refused"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

/// A server that answers every request with `answer` and passes on what
/// it was sent.
fn answering(answer: String) -> (u16, std::sync::mpsc::Receiver<String>) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut head = String::new();
            let mut r = BufReader::new(conn.try_clone().unwrap());
            while r.read_line(&mut head).unwrap_or(0) > 2 {}
            let _ = tx.send(head);
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    (port, rx)
}

#[test]
fn a_401_is_the_credentials_refused_with_basic_auth_sent() {
    let (port, sent) = answering(
        "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Basic\r\ncontent-length: 0\r\n\r\n".into(),
    );
    let access = Access {
        username: "opencode".into(),
        password: Some(Secret::new("pw".into())),
        password_file: None,
        ca_file: None,
    };
    let s = Server::new(&format!("http://127.0.0.1:{port}"), &access).unwrap();
    let err = s.call("GET", "/session/status", None).unwrap_err();
    let Failure::Unreachable(link) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(link.why, Why::Credentials { sent: true });
    assert!(err.to_string().contains("refused the credentials"), "{err}");
    assert!(!err.to_string().contains("pw"), "{err}");
    let head = sent.recv().unwrap();
    assert!(
        head.contains("authorization: Basic b3BlbmNvZGU6cHc=")
            || head.contains("Authorization: Basic b3BlbmNvZGU6cHc="),
        "{head}"
    );
    assert!(matches!(s.events(), Err(Failure::Unreachable(_))));
}

#[test]
fn an_event_stream_gives_each_events_data() {
    // Chunks that split events and lines, as a proxy may.
    let chunks = ["data: {\"type\":\"a\"}\n\ndata: x\ndat", "a: y\n\n"];
    let mut answer = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    for c in chunks {
        answer.push_str(&format!("{:x}\r\n{c}\r\n", c.len()));
    }
    answer.push_str("0\r\n\r\n");
    let (port, _sent) = answering(answer);
    let s = Server::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let mut events = s.events().unwrap();
    assert_eq!(
        events.next_event().unwrap().as_deref(),
        Some("{\"type\":\"a\"}")
    );
    assert_eq!(events.next_event().unwrap().as_deref(), Some("x\ny"));
    assert_eq!(events.next_event().unwrap(), None);
}

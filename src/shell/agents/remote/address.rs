//! Whether a server's host is this machine.

use std::net::IpAddr;

/// The host of `url` (`scheme://[user@]host[:port][/…]`), without the
/// brackets of an IPv6 literal; `None` when it names none.
pub fn host(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or(v6, |(h, _)| h),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    (!host.is_empty()).then_some(host)
}

/// Whether `host` is a loopback name or address: what goes there never
/// leaves the machine.
pub fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The warning for a plain-text URL to another machine, when it is one.
pub fn cleartext_warning(url: &str, what: &str) -> Option<String> {
    let plain = url.starts_with("http://") || url.starts_with("ws://");
    let host = host(url)?;
    (plain && !is_loopback(host)).then(|| {
        format!(
            "{what} at {url} is reached in plain text across the network: its {} crosses unencrypted; \
             put it behind a TLS-terminating proxy or a tunnel and use {} instead",
            if url.starts_with("ws://") { "token" } else { "password" },
            if url.starts_with("ws://") { "wss://" } else { "https://" },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_found_in_every_spelling() {
        assert_eq!(host("http://127.0.0.1:4096"), Some("127.0.0.1"));
        assert_eq!(host("https://oc.example.org/x"), Some("oc.example.org"));
        assert_eq!(host("ws://[::1]:5000/"), Some("::1"));
        assert_eq!(host("http://u@h:1"), Some("h"));
        assert_eq!(host("http://:1"), None);
    }

    #[test]
    fn only_loopback_is_this_machine() {
        for h in ["localhost", "127.0.0.1", "127.3.2.1", "::1"] {
            assert!(is_loopback(h), "{h}");
        }
        for h in ["10.0.0.5", "example.org", "::2", "0.0.0.0"] {
            assert!(!is_loopback(h), "{h}");
        }
    }

    #[test]
    fn plain_text_elsewhere_is_warned_about_and_nothing_else() {
        let w = cleartext_warning("http://10.0.0.5:4096", "the opencode server").unwrap();
        assert!(
            w.contains("http://10.0.0.5:4096") && w.contains("https://"),
            "{w}"
        );
        let w = cleartext_warning("ws://10.0.0.6:4500", "the codex app-server").unwrap();
        assert!(w.contains("token") && w.contains("wss://"), "{w}");
        assert_eq!(cleartext_warning("http://127.0.0.1:4096", "x"), None);
        assert_eq!(cleartext_warning("https://10.0.0.5", "x"), None);
        assert_eq!(cleartext_warning("wss://10.0.0.5", "x"), None);
    }
}

//! The certificates a server's must chain to, and the words for a TLS
//! handshake that failed.
//!
//! Both clients (ureq for opencode, tungstenite for Codex) verify a server
//! against the same roots: the system's (`/etc/ssl/certs`, as
//! rustls-native-certs finds them) or, when one is configured, the CA
//! certificates of a PEM file — those alone, so a private CA is not
//! mixed with the public ones.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{CertificateError, ClientConfig, RootCertStore};

/// Where the trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// The system's.
    System,
    /// The CA certificates of a PEM file (`ca_file`).
    File(PathBuf),
}

impl Roots {
    pub fn of(ca_file: Option<&Path>) -> Roots {
        ca_file.map_or(Roots::System, |p| Roots::File(p.to_path_buf()))
    }

    /// The certificates; the error names the file and why.
    pub fn certificates(&self) -> Result<Vec<CertificateDer<'static>>, String> {
        match self {
            Roots::System => {
                let found = rustls_native_certs::load_native_certs();
                if found.certs.is_empty() {
                    let why = found
                        .errors
                        .first()
                        .map_or("none found".to_string(), ToString::to_string);
                    return Err(format!(
                        "the system's CA certificates cannot be read: {why}"
                    ));
                }
                Ok(found.certs)
            }
            Roots::File(path) => {
                let bad = |why: String| format!("ca_file {}: {why}", path.display());
                let certs = CertificateDer::pem_file_iter(path)
                    .map_err(|e| bad(e.to_string()))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| bad(e.to_string()))?;
                if certs.is_empty() {
                    return Err(bad("holds no PEM certificate".into()));
                }
                Ok(certs)
            }
        }
    }

    /// A rustls client configuration trusting these roots.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, String> {
        let mut store = RootCertStore::empty();
        let (added, _) = store.add_parsable_certificates(self.certificates()?);
        if added == 0 {
            return Err(format!("{self}: no usable CA certificate"));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(store)
            .with_no_client_auth();
        Ok(Arc::new(config))
    }
}

impl std::fmt::Display for Roots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Roots::System => f.write_str("the system's CA certificates"),
            Roots::File(p) => write!(f, "the CA certificates of {}", p.display()),
        }
    }
}

/// A rustls error somewhere inside an I/O error (how both clients pass on
/// a failed handshake).
pub fn in_io(e: &std::io::Error) -> Option<&rustls::Error> {
    let mut inner: &(dyn std::error::Error + 'static) = e.get_ref()?;
    loop {
        if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        inner = inner.source()?;
    }
}

/// Why the handshake failed, in words, with the roots it was judged by.
pub fn describe(e: &rustls::Error, roots: &Roots) -> String {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
            "TLS: the server's certificate is not signed by a CA reveille trusts ({roots}; set ca_file to the CA that signed it)"
        ),
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "TLS: the server's certificate is not for this host name".to_string(),
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => "TLS: the server's certificate has expired".to_string(),
        other => format!("TLS: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_that_is_missing_or_empty_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Roots::File(dir.path().join("nope.pem"));
        let err = missing.certificates().unwrap_err();
        assert!(
            err.starts_with("ca_file ") && err.contains("nope.pem"),
            "{err}"
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = Roots::File(empty).certificates().unwrap_err();
        assert!(err.contains("holds no PEM certificate"), "{err}");
    }

    #[test]
    fn an_unknown_issuer_says_which_roots_judged_it() {
        let e = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let why = describe(&e, &Roots::File("/etc/x/ca.pem".into()));
        assert!(why.contains("not signed by a CA reveille trusts"), "{why}");
        assert!(why.contains("/etc/x/ca.pem"), "{why}");
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, e.clone());
        assert_eq!(in_io(&io), Some(&e));
    }
}

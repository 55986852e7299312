//! How reveille is let into a Codex app-server: the capability token it
//! sends as `Authorization: Bearer` on the WebSocket handshake (`codex
//! app-server --ws-auth capability-token`), and, for `wss://`, the roots
//! the server's certificate must chain to. Read once, when the backend is
//! made; a token or CA file that cannot be used is said then, in words.

use std::sync::Arc;

use rustls::ClientConfig;

use super::endpoint::Endpoint;
use crate::config::secret::{Secret, SecretSource};
use crate::config::CodexSettings;
use crate::shell::agents::remote::tls::Roots;

/// What the handshake needs besides the address.
#[derive(Debug, Clone)]
pub struct Access {
    pub token: Option<Secret>,
    /// Where the token came from: read again when the server refuses it,
    /// so a corrected file is used without a restart.
    pub token_file: Option<SecretSource>,
    /// For `wss://` only.
    pub tls: Option<Arc<ClientConfig>>,
    pub roots: Roots,
}

impl Access {
    /// The token read from its file, the TLS configuration built.
    pub fn of(settings: &CodexSettings, endpoint: &Endpoint) -> Result<Access, String> {
        let token = match &settings.token {
            Some(source) => Some(source.read()?),
            None => None,
        };
        let roots = Roots::of(settings.ca_file.as_deref());
        let tls = match endpoint {
            Endpoint::Tcp { tls: true, .. } => Some(roots.client_config()?),
            _ => None,
        };
        Ok(Access {
            token,
            token_file: settings.token.clone(),
            tls,
            roots,
        })
    }

    /// The server refused the token: take the file's again (it may have
    /// been corrected since).
    pub fn reread(&mut self) {
        if let Some(Ok(token)) = self.token_file.as_ref().map(SecretSource::read) {
            self.token = Some(token);
        }
    }

    /// No token, no TLS: the local daemon as the TUI runs it.
    pub fn none() -> Access {
        Access {
            token: None,
            token_file: None,
            tls: None,
            roots: Roots::System,
        }
    }
}

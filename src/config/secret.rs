//! A password or token for an agent's server: read from a file only its
//! owner can read (as systemd's credentials are), never from the TOML;
//! never shown — its `Debug` is a placeholder and it has no `Display`, so
//! no message can carry it by accident. Configuration says where it comes
//! from (and `check` shows that); the backend that sends it reads it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The secret itself.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The text, for the one header that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Made from text (tests, and headers built from a secret).
    pub fn new(text: String) -> Secret {
        Secret(text)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// Where a secret comes from: what `check` says instead of the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// A file named in the configuration.
    File(PathBuf),
    /// A systemd credential (`LoadCredential=`), under `$CREDENTIALS_DIRECTORY`.
    Credential(PathBuf),
}

impl SecretSource {
    /// The configured file, else the credential `name` when the service
    /// manager passed one; `None` when there is neither.
    pub fn find(configured: Option<&Path>, name: &str, credentials: Option<&Path>) -> Option<Self> {
        if let Some(file) = configured {
            return Some(SecretSource::File(file.to_path_buf()));
        }
        let file = credentials?.join(name);
        file.exists().then_some(SecretSource::Credential(file))
    }

    pub fn path(&self) -> &Path {
        match self {
            SecretSource::File(p) | SecretSource::Credential(p) => p,
        }
    }

    /// Whether the file is there, a regular file, and readable by its
    /// owner alone; the error names the file and its mode.
    pub fn check(&self) -> Result<(), String> {
        let path = self.path();
        let meta = std::fs::metadata(path)
            .map_err(|e| format!("secret file {}: {}", path.display(), e.kind()))?;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(format!(
                "secret file {} is refused: mode {mode:04o} lets others than its owner read or change it; \
                 it must be 0600 or stricter (chmod 600 {})",
                path.display(),
                path.display()
            ));
        }
        if !meta.is_file() {
            return Err(format!(
                "secret file {} is not a regular file",
                path.display()
            ));
        }
        Ok(())
    }

    /// Read the secret, checked first; the error names the file and its
    /// mode, never what it holds.
    pub fn read(&self) -> Result<Secret, String> {
        self.check()?;
        let path = self.path();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("secret file {}: {}", path.display(), e.kind()))?;
        // A file written with `echo` ends in a newline that is not part of it.
        let text = text.trim_end_matches(['\n', '\r']);
        if text.is_empty() {
            return Err(format!("secret file {} is empty", path.display()));
        }
        Ok(Secret(text.to_string()))
    }
}

impl std::fmt::Display for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::File(p) => write!(f, "the file {}", p.display()),
            SecretSource::Credential(p) => write!(f, "the systemd credential {}", p.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn a_secret_is_read_from_an_owner_only_file_and_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "pw", "hunter2\n", 0o600);
        let s = SecretSource::File(p).read().unwrap();
        assert_eq!(s.expose(), "hunter2");
        assert!(!format!("{s:?}").contains("hunter2"));
        let p = write(dir.path(), "ro", "x", 0o400);
        assert!(SecretSource::File(p).read().is_ok());
    }

    #[test]
    fn a_file_others_can_read_is_refused_with_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            let p = write(dir.path(), "pw", "hunter2", mode);
            let err = SecretSource::File(p.clone()).read().unwrap_err();
            assert!(err.contains(&p.display().to_string()), "{err}");
            assert!(err.contains(&format!("mode {mode:04o}")), "{err}");
            assert!(!err.contains("hunter2"), "{err}");
        }
        let p = write(dir.path(), "empty", "\n", 0o600);
        assert!(SecretSource::File(p)
            .read()
            .unwrap_err()
            .contains("is empty"));
    }

    #[test]
    fn the_credential_is_the_default_only_when_it_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path();
        assert_eq!(
            SecretSource::find(None, "opencode-password", Some(creds)),
            None
        );
        assert_eq!(SecretSource::find(None, "opencode-password", None), None);
        write(creds, "opencode-password", "x", 0o400);
        assert_eq!(
            SecretSource::find(None, "opencode-password", Some(creds)),
            Some(SecretSource::Credential(creds.join("opencode-password")))
        );
        let own = Path::new("/etc/pw");
        assert_eq!(
            SecretSource::find(Some(own), "opencode-password", Some(creds)),
            Some(SecretSource::File(own.into()))
        );
    }
}

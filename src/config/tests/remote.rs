//! The keys of an agent's server on another machine: its URL, the file of
//! its secret (or the systemd credential), its CA.

use std::os::unix::fs::PermissionsExt;

use super::*;

fn secret_file(dir: &Path, name: &str, mode: u32) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, "s3cret-value\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

#[test]
fn remote_servers_take_https_wss_a_secret_file_and_a_ca() {
    let dir = tempfile::tempdir().unwrap();
    let pw = secret_file(dir.path(), "pw", 0o600);
    let token = secret_file(dir.path(), "token", 0o400);
    let text = format!(
        "[opencode]\nurl = \"https://oc.example.org:4096\"\nusername = \"me\"\npassword_file = \"{}\"\nca_file = \"/etc/x/ca.pem\"\n\
         [codex]\nendpoint = \"wss://10.0.0.6:4500\"\ntoken_file = \"{}\"\n",
        pw.display(),
        token.display()
    );
    let path = write_config(dir.path(), &text);
    let loaded = load(&LoadOptions {
        config: Some(path),
        project: None,
        env: env(&[]),
    })
    .unwrap();
    let o = &loaded.settings.opencode;
    assert_eq!(o.url, "https://oc.example.org:4096");
    assert_eq!(o.username, "me");
    assert_eq!(o.password, Some(secret::SecretSource::File(pw.clone())));
    assert_eq!(o.ca_file, Some(PathBuf::from("/etc/x/ca.pem")));
    let c = &loaded.settings.codex;
    assert_eq!(c.endpoint.as_deref(), Some("wss://10.0.0.6:4500"));
    assert_eq!(c.token, Some(secret::SecretSource::File(token.clone())));
    // check says where each secret is, never what it is.
    let report = render_check(&loaded);
    assert!(report.contains(&pw.display().to_string()), "{report}");
    assert!(!report.contains("s3cret"), "{report}");
}

#[test]
fn a_secret_file_others_can_read_is_refused_with_its_file_line_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let pw = secret_file(dir.path(), "pw", 0o644);
    let (cfg, loaded) = with_file(
        &format!("[opencode]\n\npassword_file = \"{}\"\n", pw.display()),
        &[],
    );
    let err = loaded.unwrap_err().into_first();
    assert_eq!(
        origin(&err),
        format!("file {}, line 3", cfg.path().join("x.toml").display())
    );
    let text = err.to_string();
    assert!(
        text.contains("mode 0644") && text.contains(&pw.display().to_string()),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
}

#[test]
fn the_systemd_credentials_are_the_default_secrets_when_they_are_there() {
    let creds = tempfile::tempdir().unwrap();
    let dir = creds.path().to_str().unwrap();
    let loaded = load(&LoadOptions {
        env: env(&[("CREDENTIALS_DIRECTORY", dir)]),
        ..LoadOptions::default()
    })
    .unwrap();
    assert_eq!(loaded.settings.opencode.password, None);
    assert_eq!(loaded.settings.codex.token, None);
    let pw = secret_file(creds.path(), "opencode-password", 0o400);
    let token = secret_file(creds.path(), "codex-token", 0o400);
    let loaded = load(&LoadOptions {
        env: env(&[("CREDENTIALS_DIRECTORY", dir)]),
        ..LoadOptions::default()
    })
    .unwrap();
    assert_eq!(
        loaded.settings.opencode.password,
        Some(secret::SecretSource::Credential(pw))
    );
    assert_eq!(
        loaded.settings.codex.token,
        Some(secret::SecretSource::Credential(token))
    );
}

#[test]
fn credentials_written_into_an_address_are_refused() {
    for (section, key, value) in [
        ("opencode", "url", "http://opencode:pw@10.0.0.5:4096"),
        ("codex", "endpoint", "ws://u:tok@10.0.0.6:4500"),
        ("opencode", "url", "ftp://x"),
        ("codex", "endpoint", "http://x"),
    ] {
        let (_dir, loaded) = with_file(&format!("[{section}]\n{key} = \"{value}\"\n"), &[]);
        let err = loaded.unwrap_err().into_first().to_string();
        assert!(err.contains(&format!("{section}.{key}")), "{err}");
        if value.contains('@') {
            assert!(err.contains("never in the"), "{err}");
        }
    }
}

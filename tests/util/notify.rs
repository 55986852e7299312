//! What the person was told: a `[notify] command` that is a small script
//! appending the notice's environment to a file, one record per run, read
//! back as maps (`EVENT`, `SESSION`, `PLAN`, `STEP`, `SUMMARY`, `PROJECT`,
//! and `BODY` with its newlines as `\n`).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::project::Project;

/// The script and the file it writes.
pub struct Told {
    _dir: tempfile::TempDir,
    file: PathBuf,
}

/// One notice as the command got it.
pub type Notice = BTreeMap<String, String>;

impl Told {
    /// Write the script and make it `project`'s `[notify] command`.
    pub fn configure(project: &mut Project) -> Told {
        let dir = tempfile::Builder::new()
            .prefix("reveille-told-")
            .tempdir()
            .unwrap();
        let file = dir.path().join("told");
        let script = dir.path().join("tell");
        let mut text = String::from("#!/bin/sh\n{\n");
        for key in ["EVENT", "SESSION", "PLAN", "STEP", "SUMMARY", "PROJECT"] {
            text.push_str(&format!("  printf '{key}=%s\\n' \"$REVEILLE_{key}\"\n"));
        }
        text.push_str(
            "  printf 'BODY=%s\\n' \"$(printf '%s' \"$REVEILLE_BODY\" | tr '\\n' '\\r')\"\n",
        );
        text.push_str(&format!("  echo --\n}} >> '{}'\n", file.display()));
        std::fs::write(&script, text).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        project.set(
            "notify",
            "command",
            &format!("[{:?}]", script.display().to_string()),
        );
        Told { _dir: dir, file }
    }

    /// Every notice told so far, complete ones only, in order.
    pub fn notices(&self) -> Vec<Notice> {
        let text = std::fs::read_to_string(&self.file).unwrap_or_default();
        let mut out = Vec::new();
        let mut one = Notice::new();
        for line in text.lines() {
            if line == "--" {
                out.push(std::mem::take(&mut one));
            } else if let Some((k, v)) = line.split_once('=') {
                one.insert(k.to_string(), v.replace('\r', "\n"));
            }
        }
        out
    }

    /// The `EVENT` of each notice, in order.
    pub fn events(&self) -> Vec<String> {
        self.notices().iter().map(|n| n["EVENT"].clone()).collect()
    }
}

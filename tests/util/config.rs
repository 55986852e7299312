//! The one writer of `reveille.toml` for the tests and the wake benchmark
//! (which includes this file by `#[path]`, so it depends on nothing else).
//!
//! Why typed: a hand-written TOML string per harness drifted (one quoted
//! paths with `{:?}`, one forgot a section, one set the same key twice);
//! here every value goes through a setter that quotes it, a key set again
//! replaces the old value, and sections come out sorted, so a sub-table
//! (`[events.assignees]`) follows its parent. Tests that feed the daemon
//! deliberately broken TOML write their text by hand instead.

use std::collections::BTreeMap;
use std::path::Path;

/// `[section] key = value` settings; each value is kept as TOML text.
#[derive(Debug, Clone, Default)]
pub struct Config {
    sections: BTreeMap<String, BTreeMap<String, String>>,
}

/// `s` as a TOML basic string, escaped as TOML reads it.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Config {
    pub fn new() -> Config {
        Config::default()
    }

    /// Set `[section] key` to `value`, already TOML (`"\"x\""`, `20`,
    /// `["a"]`): for values no typed setter covers.
    pub fn set(&mut self, section: &str, key: &str, value: &str) -> &mut Config {
        self.sections
            .entry(section.to_string())
            .or_default()
            .insert(key.to_string(), value.to_string());
        self
    }

    /// Remove `[section] key`.
    pub fn unset(&mut self, section: &str, key: &str) -> &mut Config {
        if let Some(s) = self.sections.get_mut(section) {
            s.remove(key);
        }
        self
    }

    /// A string value.
    pub fn str(&mut self, section: &str, key: &str, value: &str) -> &mut Config {
        self.set(section, key, &quote(value))
    }

    /// A path value (as a string).
    pub fn path(&mut self, section: &str, key: &str, value: &Path) -> &mut Config {
        self.str(section, key, &value.display().to_string())
    }

    /// An integer value.
    pub fn num(&mut self, section: &str, key: &str, value: u64) -> &mut Config {
        self.set(section, key, &value.to_string())
    }

    /// An array of strings.
    pub fn strs(&mut self, section: &str, key: &str, values: &[&str]) -> &mut Config {
        let items: Vec<String> = values.iter().map(|v| quote(v)).collect();
        self.set(section, key, &format!("[{}]", items.join(", ")))
    }

    /// The TOML text of `[section] key`, if set.
    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.sections.get(section)?.get(key).map(String::as_str)
    }

    /// `[project] name`.
    pub fn name(&mut self, name: &str) -> &mut Config {
        self.str("project", "name", name)
    }

    /// `[project] plan_dir`.
    pub fn plan_dir(&mut self, dir: &Path) -> &mut Config {
        self.path("project", "plan_dir", dir)
    }

    /// `[project] default_session`.
    pub fn default_session(&mut self, session: &str) -> &mut Config {
        self.str("project", "default_session", session)
    }

    /// `[sessions] dir`.
    pub fn sessions_dir(&mut self, dir: &Path) -> &mut Config {
        self.path("sessions", "dir", dir)
    }

    /// `[sessions] framing`.
    pub fn framing(&mut self, framing: &str) -> &mut Config {
        self.str("sessions", "framing", framing)
    }

    /// `[state] dir`.
    pub fn state_dir(&mut self, dir: &Path) -> &mut Config {
        self.path("state", "dir", dir)
    }

    /// `[events] path`; `None` turns the tracker off (`path = ""`).
    pub fn events(&mut self, path: Option<&Path>) -> &mut Config {
        match path {
            Some(p) => self.path("events", "path", p),
            None => self.str("events", "path", ""),
        }
    }

    /// `[events] beads_root` and `mounts` (a fake local tree has no
    /// `mtab`: its mounts are named).
    pub fn beads(&mut self, root: &Path, mounts: &[&str]) -> &mut Config {
        self.path("events", "beads_root", root)
            .strs("events", "mounts", mounts)
    }

    /// `[events.assignees] "<assignee>" = "<session>"`.
    pub fn assignee(&mut self, assignee: &str, session: &str) -> &mut Config {
        self.set("events.assignees", &quote(assignee), &quote(session))
    }

    /// `[beads] issues_jsonl`; `None` turns it off.
    pub fn issues(&mut self, path: Option<&Path>) -> &mut Config {
        match path {
            Some(p) => self.path("beads", "issues_jsonl", p),
            None => self.str("beads", "issues_jsonl", ""),
        }
    }

    /// `[log] target` and `level`.
    pub fn log(&mut self, target: &str, level: &str) -> &mut Config {
        self.str("log", "target", target).str("log", "level", level)
    }

    /// The file's text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (section, keys) in &self.sections {
            out.push_str(&format!("[{section}]\n"));
            for (key, value) in keys {
                out.push_str(&format!("{key} = {value}\n"));
            }
        }
        out
    }

    /// Write the text to `path`.
    pub fn write(&self, path: &Path) {
        std::fs::write(path, self.text())
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

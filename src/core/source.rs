//! Where announced work comes from: one plan, a 9beads project, a tracker
//! mount named in the configuration, or the beads file. Persisted as
//! strings — `plan:<stamp>_<uid>`, `json:<stem>`, `session:<id>`,
//! `9beads:<cwd>`, `mount:<name>`, `beads` — also as a JSON map key, so
//! state written by any version reads back unchanged.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A source of announced items.
///
/// The variants are declared in the order of their string forms (`9beads:`
/// < `beads` < `json:` < `mount:` < `plan:` < `session:`), so the derived
/// order is the order of those strings and maps keyed by source persist
/// exactly as they did when keyed by the string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// The beads of one project on 9beads, by the directory 9beads mounted
    /// it from (its `mtab` cwd, as 9beads wrote it). 9beads keeps a
    /// project's beads by that directory and gives the mount a new random
    /// name at every mount, so this — not the name — is what a bead's
    /// identity survives a re-mount by.
    NineBeads(String),
    /// The beads `issues.jsonl`.
    Beads,
    /// A `*.plan.json` in the plan directory, by file stem.
    PlanJson(String),
    /// A tracker mount named in `[events] mounts`, by that name.
    Mount(String),
    /// A markdown plan, by its identity `<stamp>_<uid>`.
    Plan(String),
    /// `<sessions_dir>/<id>/plan`, by session id.
    SessionPlan(String),
}

impl Source {
    /// Whether this is a plan of any kind (not a tracker source).
    pub fn is_plan(&self) -> bool {
        matches!(
            self,
            Source::Plan(_) | Source::PlanJson(_) | Source::SessionPlan(_)
        )
    }

    /// Whether this is a 9beads source (a project or a configured mount).
    pub fn is_tracker_mount(&self) -> bool {
        matches!(self, Source::NineBeads(_) | Source::Mount(_))
    }

    /// What journal fields carry as `PLAN=`: the bare identity of a
    /// markdown plan (so `journalctl PLAN=<stamp>_<uid>` works), the full
    /// form of anything else.
    pub fn journal_name(&self) -> Cow<'_, str> {
        match self {
            Source::Plan(id) => Cow::Borrowed(id),
            other => Cow::Owned(other.to_string()),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::NineBeads(s) => write!(f, "9beads:{s}"),
            Source::Beads => f.write_str("beads"),
            Source::PlanJson(s) => write!(f, "json:{s}"),
            Source::Mount(s) => write!(f, "mount:{s}"),
            Source::Plan(s) => write!(f, "plan:{s}"),
            Source::SessionPlan(s) => write!(f, "session:{s}"),
        }
    }
}

/// A string that is no source's form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSource(pub String);

impl fmt::Display for UnknownSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a source: {:?}", self.0)
    }
}

impl std::error::Error for UnknownSource {}

impl FromStr for Source {
    type Err = UnknownSource;

    fn from_str(s: &str) -> Result<Source, UnknownSource> {
        if s == "beads" {
            return Ok(Source::Beads);
        }
        let (kind, name) = s.split_once(':').ok_or_else(|| UnknownSource(s.into()))?;
        let name = name.to_string();
        match kind {
            "plan" => Ok(Source::Plan(name)),
            "json" => Ok(Source::PlanJson(name)),
            "session" => Ok(Source::SessionPlan(name)),
            "mount" => Ok(Source::Mount(name)),
            "9beads" => Ok(Source::NineBeads(name)),
            _ => Err(UnknownSource(s.into())),
        }
    }
}

impl Serialize for Source {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Source, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn every_source_round_trips_through_its_string() {
        for s in [
            "9beads:/home/me/src/proj",
            "beads",
            "json:x",
            "mount:m",
            "plan:20261130T101500_a1b2c3d4",
            "session:a",
        ] {
            let source: Source = s.parse().unwrap();
            assert_eq!(source.to_string(), s);
            assert_eq!(serde_json::to_string(&source).unwrap(), format!("\"{s}\""));
        }
        assert!("plain".parse::<Source>().is_err());
        assert!("other:x".parse::<Source>().is_err());
    }

    #[test]
    fn a_map_keyed_by_source_persists_as_one_keyed_by_its_string() {
        let names = [
            "session:b",
            "plan:2",
            "mount:z",
            "json:q",
            "beads",
            "plan:10",
            "json:a",
            "9beads:/src/x",
            "9beads:/src/a:b",
        ];
        let by_source: BTreeMap<Source, u32> =
            names.iter().map(|s| (s.parse().unwrap(), 1)).collect();
        let by_string: BTreeMap<String, u32> = names.iter().map(|s| (s.to_string(), 1)).collect();
        let json = serde_json::to_string(&by_source).unwrap();
        assert_eq!(json, serde_json::to_string(&by_string).unwrap());
        let back: BTreeMap<Source, u32> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, by_source);
    }
}

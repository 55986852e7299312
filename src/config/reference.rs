//! The configuration reference — every key, its built-in default and its
//! environment variable — made from the same definitions `load` uses (the
//! defaults layer, the variable naming rule), so the man page that prints
//! it cannot drift from the program.

use figment::value::Value;

use super::layers::{env_name, Layer, MAP_TABLES};

/// The project name the reference shows where a default mentions it.
const PROJECT: &str = "<project>";

/// One key of the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyReference {
    /// `section.key`.
    pub key: String,
    /// The built-in default, as TOML writes it.
    pub default: String,
    /// The environment variable that sets it.
    pub env: String,
}

/// Every key, section by section, with its default and variable.
pub fn reference() -> Vec<KeyReference> {
    let defaults = Layer::defaults(PROJECT);
    let mut out = Vec::new();
    for (section, keys) in defaults.dict() {
        let Some(keys) = keys.as_dict() else { continue };
        for (key, value) in keys {
            let dotted = format!("{section}.{key}");
            let mut env = env_name(section, key);
            if MAP_TABLES.contains(&dotted.as_str()) {
                env.push_str(" (or ");
                env.push_str(&env_name(section, key));
                env.push_str("__<name>)");
            }
            let default = match dotted.as_str() {
                // Chosen before the layers are read (doc/CONFIG.md).
                "project.name" => {
                    "--project, else the only configured project, else \"default\"".to_string()
                }
                _ => toml(value),
            };
            out.push(KeyReference {
                key: dotted,
                default,
                env,
            });
        }
    }
    out
}

/// A default as TOML writes it.
fn toml(value: &Value) -> String {
    match value {
        Value::Dict(_, d) if d.is_empty() => "{}".to_string(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_has_its_default_and_variable() {
        let r = reference();
        let find = |k: &str| r.iter().find(|e| e.key == k).unwrap().clone();
        assert_eq!(find("project.plan_dir").default, "\"~/src/<project>/pl\"");
        assert_eq!(find("project.plan_dir").env, "REVEILLE_PROJECT__PLAN_DIR");
        assert_eq!(find("sessions.outbox_cap").default, "1000");
        assert_eq!(find("project.nudge_done").default, "true");
        assert_eq!(find("events.mounts").default, "[]");
        assert_eq!(find("events.assignees").default, "{}");
        assert!(find("events.assignees")
            .env
            .contains("REVEILLE_EVENTS__ASSIGNEES__<name>"));
        assert_eq!(
            find("state.dir").default,
            "\"$XDG_STATE_HOME/reveille/<project>\""
        );
    }
}

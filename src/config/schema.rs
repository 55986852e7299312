//! The shape every layer must fit: which sections and keys exist and what
//! type each holds, checked key by key so that every unknown key and every
//! wrong type is reported in one go — each with its key, its origin, and
//! for a near miss the key that was probably meant.

use figment::value::{Dict, Value};

use super::layers::{entry_key, env_name, Layers, MAP_TABLES};
use super::origin::Origin;
use super::suggest::suggest;
use super::wording;
use super::{from_figment, ConfigError};

/// Every unknown key and every value of the wrong type in `layers`, in key
/// order. `defaults` is the built-in layer, which has every key.
pub(crate) fn problems(layers: &Layers, defaults: &Dict) -> Vec<ConfigError> {
    let merged: Dict = match layers.figment.extract() {
        Ok(d) => d,
        Err(e) => return vec![from_figment(e, layers)],
    };
    let mut out = Vec::new();
    for (section, value) in &merged {
        let Some(Value::Dict(_, known)) = defaults.get(section) else {
            out.push(unknown(layers, section, section, defaults, defaults));
            continue;
        };
        let Value::Dict(_, keys) = value else {
            out.push(not_a_table(layers, section, value));
            continue;
        };
        for (key, value) in keys {
            let dotted = format!("{section}.{key}");
            match known.get(key) {
                None => out.push(unknown(layers, &dotted, key, known, defaults)),
                Some(_) if MAP_TABLES.contains(&dotted.as_str()) => {
                    map_entries(layers, &dotted, value, &mut out)
                }
                Some(default) => out.extend(check_type(layers, &dotted, default, value)),
            }
        }
    }
    out
}

/// Every known section the layers set to something that is not a table
/// (`project = 3`): said as such, before anything looks inside it.
pub(crate) fn sections(layers: &Layers, defaults: &Dict) -> Vec<ConfigError> {
    let Ok(merged) = layers.figment.extract::<Dict>() else {
        return Vec::new();
    };
    merged
        .iter()
        .filter(|(section, value)| {
            matches!(defaults.get(*section), Some(Value::Dict(..)))
                && !matches!(value, Value::Dict(..))
        })
        .map(|(section, value)| not_a_table(layers, section, value))
        .collect()
}

fn not_a_table(layers: &Layers, section: &str, value: &Value) -> ConfigError {
    ConfigError {
        key: Some(section.to_string()),
        value: layers.shown_value(section),
        origin: Some(layers.origin(section)),
        message: format!(
            "expected a table (a [{section}] section), found {}",
            wording::found(value)
        ),
    }
}

/// A table of user-chosen names (`events.assignees`): every entry a string.
fn map_entries(layers: &Layers, table: &str, value: &Value, out: &mut Vec<ConfigError>) {
    let Value::Dict(_, entries) = value else {
        out.push(wrong_type(
            layers,
            table,
            "expected a table of names and session ids",
        ));
        return;
    };
    for (name, v) in entries {
        if !matches!(v, Value::String(..)) {
            let key = entry_key(table, name);
            let message = format!(
                "expected a session id (a string), found {}",
                wording::found(v)
            );
            let mut e = wrong_type(layers, &key, &message);
            e.value = serde_json::to_string(v).ok();
            out.push(e);
        }
    }
}

/// Extracts `key` as the type its default has, with the same lossy
/// conversions the full extraction applies (`"500"` is a number); the
/// error says what was expected and found in words.
fn check_type(layers: &Layers, key: &str, default: &Value, value: &Value) -> Option<ConfigError> {
    let f = &layers.figment;
    let result = match default {
        Value::String(..) => f.extract_inner_lossy::<String>(key).map(drop),
        Value::Bool(..) => f.extract_inner_lossy::<bool>(key).map(drop),
        Value::Num(..) => f.extract_inner_lossy::<u64>(key).map(drop),
        Value::Array(..) => f.extract_inner_lossy::<Vec<String>>(key).map(drop),
        _ => Ok(()),
    };
    result.err().map(|e| {
        let mut e = from_figment(e, layers);
        // figment names the key relative to the extraction; name it whole.
        if e.key.as_deref().is_none_or(|k| !k.starts_with(key)) {
            e.key = Some(key.to_string());
            e.value = layers.shown_value(key);
            e.origin = Some(layers.origin(key));
        }
        // A list's element is described by figment; a plain value by us.
        if e.key.as_deref() == Some(key) {
            e.message = wording::mismatch(default, value);
        }
        e
    })
}

fn wrong_type(layers: &Layers, key: &str, message: &str) -> ConfigError {
    ConfigError {
        key: Some(key.to_string()),
        value: layers.shown_value(key),
        origin: Some(layers.origin(key)),
        message: message.to_string(),
    }
}

/// An unknown `key` (dotted) whose last part is `name`, among the `known`
/// keys of its section.
fn unknown(layers: &Layers, key: &str, name: &str, known: &Dict, all: &Dict) -> ConfigError {
    let names: Vec<&str> = known.keys().map(String::as_str).collect();
    let origin = layers.origin(key);
    let meant = match suggest(name, &names) {
        Some(near) => Some(match key.split_once('.') {
            Some((section, _)) => format!("{section}.{near}"),
            None => near.to_string(),
        }),
        None => elsewhere(name, all),
    };
    // Said the way it was written: a variable for a variable.
    let hint = match (&meant, &origin) {
        (Some(k), Origin::Env(_)) => match k.split_once('.') {
            Some((section, key)) => format!(" (did you mean {}?)", env_name(section, key)),
            None => format!(" (did you mean {k}?)"),
        },
        (Some(k), _) => match (k.split_once('.'), key.split_once('.')) {
            // The same section: the key alone is enough.
            (Some((s1, near)), Some((s2, _))) if s1 == s2 => format!(" (did you mean {near}?)"),
            _ => format!(" (did you mean {k}?)"),
        },
        (None, _) => String::new(),
    };
    // A whole unknown section is named without its contents.
    let value = key.contains('.').then(|| layers.shown_value(key)).flatten();
    ConfigError {
        key: Some(key.to_string()),
        value,
        origin: Some(origin),
        message: format!("unknown key{hint}; expected one of {}", names.join(", ")),
    }
}

/// `name` as a key of another section (`[project] enqueue` meant
/// `sessions.enqueue`).
fn elsewhere(name: &str, all: &Dict) -> Option<String> {
    all.iter().find_map(|(section, v)| match v {
        Value::Dict(_, keys) if keys.contains_key(name) => Some(format!("{section}.{name}")),
        _ => None,
    })
}

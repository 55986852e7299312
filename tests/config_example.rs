//! `config/example.toml` must stay loadable: it documents every key, so a
//! key renamed or removed in the code without updating it fails here.

use std::path::PathBuf;

use reveille::config::{load, render_check, LoadOptions, Origin};

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config/example.toml")
}

#[test]
fn example_config_loads() {
    let loaded = load(&LoadOptions {
        config: Some(example()),
        project: None,
        env: Some(vec![("HOME".into(), "/home/u".into())]),
    })
    .unwrap_or_else(|e| panic!("config/example.toml: {e}"));
    assert_eq!(loaded.file, Some(example()));
    assert_eq!(loaded.settings.project.name, "myproj");
    // The example sets every key (assignees are only shown commented out),
    // so every other key must be reported as coming from it.
    let report = render_check(&loaded);
    for (key, _, origin) in &loaded.sources {
        if key != "events.assignees" {
            assert!(
                matches!(origin, Origin::File { line: Some(_), .. }),
                "{key} from {origin}:\n{report}"
            );
        }
    }
}

#[test]
fn example_config_lists_every_key() {
    let text = std::fs::read_to_string(example()).unwrap();
    let loaded = load(&LoadOptions {
        env: Some(vec![("HOME".into(), "/home/u".into())]),
        ..LoadOptions::default()
    })
    .unwrap();
    for (key, _, _) in &loaded.sources {
        let leaf = key.rsplit('.').next().unwrap();
        if key.starts_with("events.assignees") {
            continue;
        }
        let env_name = format!("REVEILLE_{}", key.replace('.', "__").to_uppercase());
        assert!(
            text.contains(&format!("{leaf} = ")) && text.contains(&env_name),
            "config/example.toml does not document {key} ({env_name})"
        );
    }
}

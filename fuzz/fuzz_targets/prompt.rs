//! Prompt templates: `check` and `render` never panic; a template that
//! passes `check` renders every known placeholder (none is left as `{name}`
//! when its value has no braces).
#![no_main]

use libfuzzer_sys::fuzz_target;
use reveille::core::prompt::{check, render, STEP_VARS};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // template \x1f value \x1f value ...: values for the step placeholders.
    let mut parts = text.split('\u{1f}');
    let template = parts.next().unwrap_or_default();
    let values: Vec<&str> = parts.collect();
    let vars: Vec<(&str, &str)> = STEP_VARS
        .iter()
        .enumerate()
        .map(|(i, name)| (*name, values.get(i).copied().unwrap_or("v")))
        .collect();
    let out = render(template, &vars);
    if check(template, STEP_VARS).is_ok() && values.iter().all(|v| !v.contains(['{', '}'])) {
        for name in STEP_VARS {
            let placeholder = format!("{{{name}}}");
            assert!(
                !out.contains(&placeholder) || template.contains(&format!("{{{placeholder}}}")),
                "{placeholder} left in {out:?} from {template:?}"
            );
        }
    }
});

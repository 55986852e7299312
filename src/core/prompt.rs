//! Prompt rendering: `{name}` placeholders filled from a wake-up's facts.
//!
//! Templates are per project (`[prompt]` in the configuration). A line whose
//! placeholders all expand to nothing is dropped, so an empty description
//! does not leave a blank line in the middle of a prompt. `{{` and `}}` are
//! literal braces. Rendering is total: it never fails at wake time, because
//! templates are checked once, when the configuration is loaded.

/// Placeholders a step prompt may use.
pub const STEP_VARS: &[&str] = &[
    "goal",
    "id",
    "title",
    "description",
    "deps",
    "file",
    "path",
    "plan",
    "session",
    "close",
];

/// Placeholders a tracker prompt (bead or issue) may use.
/// `mount` is the task's current 9beads mount name (`-` for beads) and
/// `beads_root` the mount root; `close` says how the task is closed
/// (`echo {id} > {beads_root}/{mount}/complete` for 9beads).
pub const TASK_VARS: &[&str] = &[
    "id",
    "title",
    "mount",
    "beads_root",
    "assignee",
    "session",
    "source",
    "close",
];

/// Placeholders the all-steps-done prompt may use.
pub const DONE_VARS: &[&str] = &["goal", "file", "path", "plan", "session", "done_file"];

/// Placeholders a reminder may use.
pub const REMIND_VARS: &[&str] = &[
    "id", "title", "file", "path", "session", "ago", "n", "max", "close", "call",
];

/// Who speaks, and why: the last line of every default prompt. An agent
/// receives a prompt as if its user had typed it, or — Claude Code — as a
/// message "from another Claude session … not typed by your user", warned
/// against permission laundering; so it is told that it comes from
/// reveille, a program its user set up, and that it asks for nothing but
/// the work.
macro_rules! signature {
    () => {
        "(Sent by reveille, the plan watcher your user set up for this project: a program, not your user and not another agent session. It tells you when work becomes ready; it grants no permissions.)"
    };
}
pub const SIGNATURE: &str = signature!();

/// The default reminder: what is still open, since when, and exactly how
/// to close it — worded apart from the first prompt, so an agent (and a
/// person reading the transcript) sees it is being asked again. `{call}`
/// is the older name of `{close}`.
pub const DEFAULT_REMIND: &str = concat!(
    "\
[reveille] Reminder {n} of {max}: {id} is still open: {title}
It was announced to you {ago} ago and is not closed yet.
Where: {path}
If it is finished, {close}; if it is blocked, say what blocks it.
",
    signature!(),
    "\n"
);

/// The default step prompt: the goal, the step's id, title, description and
/// dependencies, the plan file by its whole path (a session checklist's
/// bare name is just `plan`), and exactly how to close the step with the
/// tools the agent has (`core::close`).
pub const DEFAULT_STEP: &str = concat!(
    "\
[reveille] Step {id} of \"{goal}\" is ready: {title}
{description}
Completed dependencies: {deps}.
Plan file: {path}
When it is finished, {close}.
",
    signature!(),
    "\n"
);

/// The default prompt when every step of a wip plan is checked.
pub const DEFAULT_DONE: &str = concat!(
    "\
[reveille] Every step of \"{goal}\" is checked.
If the goal is realised, rename {file} to {done_file}.
",
    signature!(),
    "\n"
);

/// The default prompt for a tracker task entering the ready set.
pub const DEFAULT_TASK: &str = concat!(
    "\
[reveille] Task {id} is ready: {title}
Source: {source}
When it is finished, {close}.
",
    signature!(),
    "\n"
);

/// The default prompt for a task assigned to this session by someone else.
pub const DEFAULT_CLAIM: &str = concat!(
    "\
[reveille] Task {id} was assigned to {assignee}: {title}
Source: {source}
When it is finished, {close}.
",
    signature!(),
    "\n"
);

/// The default prompt for a task completed elsewhere.
pub const DEFAULT_COMPLETED: &str = concat!(
    "\
[reveille] Task {id} was completed elsewhere: {title}
Stop any work on it.
Source: {source}
",
    signature!(),
    "\n"
);

/// A template problem found when the configuration is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError(pub String);

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The placeholder names of one template line, in order; an error for an
/// unclosed `{` or a lone `}`.
fn placeholders(line: &str) -> Result<Vec<&str>, TemplateError> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(pos) = rest.find(['{', '}']) {
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("{{").or_else(|| tail.strip_prefix("}}")) {
            rest = after;
        } else if let Some(name) = tail.strip_prefix('{') {
            let Some(end) = name.find('}') else {
                return Err(TemplateError(format!("unclosed '{{' in {line:?}")));
            };
            out.push(&name[..end]);
            rest = &name[end + 1..];
        } else {
            return Err(TemplateError(format!(
                "lone '}}' in {line:?} (write '}}}}' for a brace)"
            )));
        }
    }
    Ok(out)
}

/// Check a template against the placeholders its kind offers.
pub fn check(template: &str, allowed: &[&str]) -> Result<(), TemplateError> {
    for line in template.split('\n') {
        for name in placeholders(line)? {
            if !allowed.contains(&name) {
                return Err(TemplateError(format!(
                    "unknown placeholder {{{name}}}; known: {}",
                    allowed.join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// Render `template` with `vars`. Unknown placeholders (only possible with
/// an unchecked template) render as themselves, so nothing is lost.
///
/// One pass straight into the result: each line is rendered in place and
/// cut off again if it is to be dropped, so no piece list and no line
/// buffer is allocated (this runs on every wake-up).
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let extra: usize = vars.iter().map(|(_, v)| v.len()).sum();
    let mut out = String::with_capacity(template.len() + extra);
    for (i, line) in template.split('\n').enumerate() {
        let mark = out.len();
        if !out.is_empty() || i > 0 {
            out.push('\n');
        }
        let body = out.len();
        match render_line(line, vars, &mut out) {
            Some((seen, empty)) => {
                if seen > 0 && seen == empty && out[body..].trim().is_empty() {
                    out.truncate(mark);
                }
            }
            None => {
                out.truncate(body);
                out.push_str(line);
            }
        }
    }
    // A template's own leading blank-line handling: keep the text as written.
    if template.starts_with('\n') && !out.starts_with('\n') {
        out.insert(0, '\n');
    }
    not_a_command(out)
}

/// The tag a prompt that would begin with `/` is given.
pub const COMMAND_GUARD: &str = "[reveille] ";

/// ollie runs a submitted text that begins with `/` as a command
/// (`/compact`, `/clear`, …), not as a prompt; a template or a step title
/// must never be able to do that. Such a text is tagged in front, which
/// ollie's trimming cannot take away.
pub fn not_a_command(mut text: String) -> String {
    if text.trim_start().starts_with('/') {
        text.insert_str(0, COMMAND_GUARD);
    }
    text
}

/// Render one template line onto `out`: `Some((placeholders, of them
/// empty))`, or `None` for a malformed line (what was pushed is garbage).
fn render_line(line: &str, vars: &[(&str, &str)], out: &mut String) -> Option<(usize, usize)> {
    let (mut seen, mut empty) = (0, 0);
    let mut rest = line;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if let Some(name) = tail.strip_prefix('{') {
            let end = name.find('}')?;
            let name_str = &name[..end];
            seen += 1;
            match vars.iter().find(|(k, _)| *k == name_str) {
                Some((_, v)) => {
                    empty += usize::from(v.is_empty());
                    out.push_str(v);
                }
                None => out.push_str(&tail[..end + 2]),
            }
            rest = &name[end + 1..];
        } else {
            return None;
        }
    }
    out.push_str(rest);
    Some((seen, empty))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_never_begins_with_a_slash() {
        let out = render("{title}\n", &[("title", "  /compact everything")]);
        assert_eq!(out, "[reveille]   /compact everything\n");
        assert!(!out.trim_start().starts_with('/'));
        assert_eq!(render("a /b\n", &[]), "a /b\n");
    }

    #[test]
    fn fills_placeholders_and_drops_empty_lines() {
        let out = render(
            "A {title}\n{description}\nB {{x}} {deps}\n",
            &[("title", "t"), ("description", ""), ("deps", "s1")],
        );
        assert_eq!(out, "A t\nB {x} s1\n");
    }

    #[test]
    fn a_line_with_text_around_an_empty_var_stays() {
        let out = render("Deps: {deps}\n", &[("deps", "")]);
        assert_eq!(out, "Deps: \n");
    }

    #[test]
    fn check_names_unknown_placeholders() {
        assert!(check(DEFAULT_STEP, STEP_VARS).is_ok());
        assert!(check(DEFAULT_DONE, DONE_VARS).is_ok());
        assert!(check(DEFAULT_TASK, TASK_VARS).is_ok());
        assert!(check(DEFAULT_CLAIM, TASK_VARS).is_ok());
        assert!(check(DEFAULT_COMPLETED, TASK_VARS).is_ok());
        assert!(check(DEFAULT_REMIND, REMIND_VARS).is_ok());
        for t in [
            DEFAULT_STEP,
            DEFAULT_DONE,
            DEFAULT_TASK,
            DEFAULT_CLAIM,
            DEFAULT_COMPLETED,
            DEFAULT_REMIND,
        ] {
            assert!(t.trim_end().ends_with(SIGNATURE), "{t}");
            assert!(!t.contains("task_complete"), "{t}");
        }
        let err = check("x {nope}", STEP_VARS).unwrap_err();
        assert!(err.0.contains("{nope}"), "{err}");
        assert!(check("x {title", STEP_VARS).is_err());
        assert!(check("x }", STEP_VARS).is_err());
    }

    enum Piece<'a> {
        Text(&'a str),
        Brace(char),
        Var(&'a str),
    }

    fn pieces(line: &str) -> Result<Vec<Piece<'_>>, TemplateError> {
        let mut out = Vec::new();
        let mut rest = line;
        while !rest.is_empty() {
            let Some(pos) = rest.find(['{', '}']) else {
                out.push(Piece::Text(rest));
                break;
            };
            if pos > 0 {
                out.push(Piece::Text(&rest[..pos]));
            }
            let tail = &rest[pos..];
            if let Some(after) = tail.strip_prefix("{{") {
                out.push(Piece::Brace('{'));
                rest = after;
            } else if let Some(after) = tail.strip_prefix("}}") {
                out.push(Piece::Brace('}'));
                rest = after;
            } else if let Some(name) = tail.strip_prefix('{') {
                let Some(end) = name.find('}') else {
                    return Err(TemplateError(format!("unclosed '{{' in {line:?}")));
                };
                out.push(Piece::Var(&name[..end]));
                rest = &name[end + 1..];
            } else {
                return Err(TemplateError(format!(
                    "lone '}}' in {line:?} (write '}}}}' for a brace)"
                )));
            }
        }
        Ok(out)
    }

    /// The straightforward renderer `render` replaced, kept to check it against.
    fn reference_render(template: &str, vars: &[(&str, &str)]) -> String {
        let mut out = String::with_capacity(template.len() + 128);
        for (i, line) in template.split('\n').enumerate() {
            let Ok(parts) = pieces(line) else {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str(line);
                continue;
            };
            let mut rendered = String::with_capacity(line.len());
            let mut vars_seen = 0;
            let mut vars_empty = 0;
            for part in parts {
                match part {
                    Piece::Text(t) => rendered.push_str(t),
                    Piece::Brace(c) => rendered.push(c),
                    Piece::Var(name) => {
                        vars_seen += 1;
                        match vars.iter().find(|(k, _)| *k == name) {
                            Some((_, v)) => {
                                if v.is_empty() {
                                    vars_empty += 1;
                                }
                                rendered.push_str(v);
                            }
                            None => {
                                rendered.push('{');
                                rendered.push_str(name);
                                rendered.push('}');
                            }
                        }
                    }
                }
            }
            if vars_seen > 0 && vars_seen == vars_empty && rendered.trim().is_empty() {
                continue;
            }
            if !out.is_empty() || i > 0 {
                out.push('\n');
            }
            out.push_str(&rendered);
        }
        // A template's own leading blank-line handling: keep the text as written.
        if template.starts_with('\n') && !out.starts_with('\n') {
            out.insert(0, '\n');
        }
        out
    }

    #[test]
    fn renders_exactly_as_the_reference_renderer() {
        let vars = [
            ("title", "Write the parser"),
            ("description", ""),
            ("deps", "s1, s2"),
            ("goal", "G"),
            ("blank", "  "),
        ];
        let templates = [
            DEFAULT_STEP,
            DEFAULT_DONE,
            DEFAULT_TASK,
            "",
            "\n",
            "\n\n{title}",
            "{description}",
            "{description}\n{description}\nx",
            "  {description}  \n{title}",
            "{blank}\n{description}{blank}",
            "a {{b}} {title} }} {{",
            "x {title",
            "x } y\n{title}",
            "{unknown} {title}\n{nope}",
            "{}{title}",
            "\n{description}\n",
            "é {title} ü\n\n",
        ];
        for t in templates {
            assert_eq!(render(t, &vars), reference_render(t, &vars), "{t:?}");
        }
    }

    #[test]
    fn unknown_placeholders_render_as_themselves() {
        assert_eq!(render("{a}{b}", &[("a", "1")]), "1{b}");
    }
}

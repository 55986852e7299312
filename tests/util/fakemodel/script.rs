//! What the fake model does with a prompt: the part every API shares.
//!
//! A prompt asks the agent to close plan steps in one of two ways, and the
//! fake model answers each with one call to the agent's own shell tool
//! that ticks the step in the file:
//!
//! - `TICK <path> :: <title>` lines (the convention of the real ollie-9p
//!   test server's fake model; `TICK <path>` alone ticks the first
//!   unchecked step);
//! - reveille's default close instruction, ``change `- [ ] <title>` to
//!   `- [x] <title>` in <path>`` (core/prompt.rs).
//!
//! `delay=<seconds>` anywhere in the prompt makes every model request of
//! that turn take that long (a person's long turn).

use std::time::Duration;

/// One step to tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tick {
    pub path: String,
    /// `None`: the first unchecked step.
    pub title: Option<String>,
}

/// What the prompt asks of the fake model.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Script {
    pub ticks: Vec<Tick>,
    pub delay: Option<Duration>,
    /// `ASK <question>` on a line of its own: the model asks the person
    /// through the agent's question tool (opencode's `question`).
    pub ask: Option<String>,
}

impl Script {
    /// Read the last user message of a request.
    pub fn of(prompt: &str) -> Script {
        let mut ticks = Vec::new();
        let ask = prompt.lines().find_map(|l| {
            let q = l.trim().strip_prefix("ASK ")?.trim();
            (!q.is_empty()).then(|| q.to_string())
        });
        for line in prompt.lines() {
            if let Some(t) = tick_line(line).or_else(|| close_line(line)) {
                ticks.push(t);
            }
        }
        Script {
            ticks,
            delay: delay(prompt),
            ask,
        }
    }
}

fn tick_line(line: &str) -> Option<Tick> {
    let rest = line.trim().strip_prefix("TICK")?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let rest = rest.trim();
    let (path, title) = match rest.split_once(" :: ") {
        Some((p, t)) => (p.trim(), Some(t.trim().to_string())),
        None => (rest, None),
    };
    (!path.is_empty()).then(|| Tick {
        path: path.to_string(),
        title,
    })
}

/// ``change `- [ ] T` to `- [x] T` in PATH`` (any text around it).
fn close_line(line: &str) -> Option<Tick> {
    let at = line.find("change `- [ ] ")?;
    let rest = &line[at + "change `- [ ] ".len()..];
    let (title, rest) = rest.split_once("` to `- [x] ")?;
    let rest = rest.strip_prefix(title)?.strip_prefix("` in ")?;
    let path = rest.split_whitespace().next()?;
    let path = path.trim_end_matches(['.', ',', ';', ':']);
    Some(Tick {
        path: path.to_string(),
        title: Some(title.to_string()),
    })
}

fn delay(prompt: &str) -> Option<Duration> {
    let at = prompt.find("delay=")?;
    let num: String = prompt[at + 6..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    num.parse::<f64>().ok().map(Duration::from_secs_f64)
}

/// `s` as a bash `$'…'` literal.
fn bash_quote(s: &str) -> String {
    let mut out = String::from("$'");
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 32 || c as u32 == 127 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A bash script that rewrites, in place, the first line of the file that
/// is exactly `- [ ] <title>` — as strict as an agent's exact-text edit:
/// reveille's close instruction must quote the line as written, annotation
/// and all — surrounding whitespace ignored, indentation kept, to
/// `- [x] <title>` and prints `ticked: <title>`; it exits 1 with `step not
/// found` or `no such file` otherwise. Pure bash, so it runs in any agent's
/// shell tool.
pub fn tick_command(tick: &Tick) -> String {
    let title = tick.title.clone().unwrap_or_default();
    format!(
        r#"f={path}
title={title}
[ -f "$f" ] || {{ echo "no such file: $f" >&2; exit 1; }}
buf= hit= got=
while :; do
  if IFS= read -r line; then nl=$'\n'; else [ -n "$line" ] || break; nl=; fi
  if [ -z "$hit" ]; then
    t="${{line#"${{line%%[![:space:]]*}}"}}"; t="${{t%"${{t##*[![:space:]]}}"}}"
    if [ -n "$title" ]; then
      [ "$t" = "- [ ] $title" ] && hit=1
    else
      case $t in "- [ ] "?*) hit=1 ;; esac
    fi
    if [ -n "$hit" ]; then line="${{line/"- [ ] "/"- [x] "}}"; got="${{title:-${{t#"- [ ] "}}}}"; fi
  fi
  buf+="$line$nl"
  [ -n "$nl" ] || break
done < "$f"
if [ -z "$hit" ]; then
  if [ -n "$title" ]; then echo "step not found: - [ ] $title" >&2; else echo "no unchecked step in $f" >&2; fi
  exit 1
fi
printf '%s' "$buf" > "$f" || exit 1
echo "ticked: $got""#,
        path = bash_quote(&tick.path),
        title = bash_quote(&title),
    )
}

/// The same tick as one `sed -i` (then `echo ticked: <title>`): a command
/// an approval rule can name (Codex's `prefix_rule(pattern=["sed"], …)`).
/// Titles are plain words in the tests that use it; the regex
/// metacharacters are escaped all the same.
pub fn sed_tick_command(tick: &Tick) -> String {
    let title = tick.title.clone().unwrap_or_default();
    let mut re = String::new();
    for ch in title.chars() {
        if "/\\.*[]^$&".contains(ch) {
            re.push('\\');
        }
        re.push(ch);
    }
    format!(
        "sed -i {} {} && echo {}",
        sh_quote(&format!("s/- \\[ \\] {re}$/- [x] {re}/")),
        sh_quote(&tick.path),
        sh_quote(&format!("ticked: {title}")),
    )
}

/// `s` in single quotes: the plain quoting a command parser (Codex's,
/// matching its rules) reads as one word.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sed_tick_ticks_the_titled_step() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.md");
        std::fs::write(&f, "# G\n\n- [ ] A.b\n  - [ ] Write the lexer\n").unwrap();
        let tick = Tick {
            path: f.display().to_string(),
            title: Some("Write the lexer".into()),
        };
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(sed_tick_command(&tick))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "ticked: Write the lexer\n"
        );
        assert_eq!(
            std::fs::read_to_string(&f).unwrap(),
            "# G\n\n- [ ] A.b\n  - [x] Write the lexer\n"
        );
    }

    #[test]
    fn tick_lines_close_instructions_and_delays_are_read() {
        let s = Script::of(
            "do it\nTICK /p/a.md :: Build it\n  TICK rel.md\nTICKLE x\ndelay=1.5\n\
             When it is finished, change `- [ ] Ship (v2)` to `- [x] Ship (v2)` in /p/b.md.\n",
        );
        assert_eq!(
            s.ticks,
            vec![
                Tick {
                    path: "/p/a.md".into(),
                    title: Some("Build it".into())
                },
                Tick {
                    path: "rel.md".into(),
                    title: None
                },
                Tick {
                    path: "/p/b.md".into(),
                    title: Some("Ship (v2)".into())
                },
            ]
        );
        assert_eq!(s.delay, Some(Duration::from_millis(1500)));
        assert_eq!(Script::of("plain").ticks, vec![]);
    }

    #[test]
    fn the_tick_command_ticks_exactly_the_titled_step() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.md");
        std::fs::write(
            &f,
            "# G\n\n- [ ] A\n  - [ ] B's \"step\" (after: none)\n- [ ] C\n",
        )
        .unwrap();
        // The title without its annotation is not the line.
        let short = Tick {
            path: f.display().to_string(),
            title: Some("B's \"step\"".into()),
        };
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(tick_command(&short))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{out:?}");
        let tick = Tick {
            path: f.display().to_string(),
            title: Some("B's \"step\" (after: none)".into()),
        };
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(tick_command(&tick))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "ticked: B's \"step\" (after: none)\n"
        );
        assert_eq!(
            std::fs::read_to_string(&f).unwrap(),
            "# G\n\n- [ ] A\n  - [x] B's \"step\" (after: none)\n- [ ] C\n"
        );
        let missing = Tick {
            path: f.display().to_string(),
            title: Some("Z".into()),
        };
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(tick_command(&missing))
            .output()
            .unwrap();
        assert!(!out.status.success());
    }
}

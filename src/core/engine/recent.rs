//! The last parse of the few markdown plans read most recently, so that a
//! rewrite which only flips checkboxes — what `task_complete` does on
//! every tick — is not parsed again: the kept text is compared with the
//! new one around the checkbox characters, and the kept parse has its
//! statuses set from the new ones.
//!
//! A parse is a function of the text alone, so a text equal to the kept
//! one everywhere but inside step checkboxes parses to the kept plan with
//! those steps' statuses changed: a checkbox holds ` `, `x` or `X` either
//! way, so the same lines are steps, with the same titles, keys,
//! descriptions and dependencies. Anything else changed means a full
//! parse. Bounded: `KEEP` plans of at most `KEEP_BYTES`, whatever the
//! number tracked (the parse itself is otherwise not kept, see
//! `PlanState::summary`).

use crate::core::plan::{Plan, StepStatus};
use crate::core::source::Source;

/// Plans kept, most recently read last: the plans being worked on now.
const KEEP: usize = 8;

/// Larger texts are not kept, so what is kept stays under a few
/// megabytes whatever `max_plan_bytes` allows (a 64 KiB checklist is
/// some 700 steps).
const KEEP_BYTES: usize = 64 << 10;

/// One kept parse.
#[derive(Debug)]
struct Kept {
    source: Source,
    /// The text that was parsed.
    text: Vec<u8>,
    /// Its parse; `None` while taken (until `keep` puts it back).
    plan: Option<Plan>,
    /// Per step, in order, the offset in `text` of the character between
    /// its checkbox's brackets.
    boxes: Vec<usize>,
}

/// The kept parses.
#[derive(Debug, Default)]
pub(super) struct Recent {
    kept: Vec<Kept>,
}

impl Recent {
    /// The parse of `text`, a markdown plan of `source`, when it is the
    /// kept text with only checkboxes flipped (the parse is taken out, the
    /// text follows the new one: `keep` puts the parse back without
    /// looking for the checkboxes again). `None`: parse it.
    pub(super) fn take(&mut self, source: &Source, text: &[u8]) -> Option<Plan> {
        let k = self.kept.iter_mut().find(|k| &k.source == source)?;
        if k.text.len() != text.len() || !same_but_boxes(&k.text, text, &k.boxes) {
            return None;
        }
        let mut plan = k.plan.take()?;
        for (step, &at) in plan.steps.iter_mut().zip(&k.boxes) {
            k.text[at] = text[at];
            step.status = status_of(text[at])?;
        }
        Some(plan)
    }

    /// Keep `plan`, the parse of `text`, as the latest of `source`. Not
    /// kept when a step's checkbox cannot be found where it was parsed.
    pub(super) fn keep(&mut self, source: &Source, text: Vec<u8>, plan: Plan) {
        let at = self.kept.iter().position(|k| &k.source == source);
        if let Some(mut k) = at.map(|i| self.kept.remove(i)) {
            // Taken for this very text: its checkboxes are where they were.
            if k.plan.is_none() && k.text == text {
                k.plan = Some(plan);
                self.kept.push(k);
                return;
            }
        }
        if text.len() > KEEP_BYTES {
            return;
        }
        let Some(boxes) = boxes(&text, &plan) else {
            return;
        };
        if self.kept.len() == KEEP {
            self.kept.remove(0);
        }
        self.kept.push(Kept {
            source: source.clone(),
            text,
            plan: Some(plan),
            boxes,
        });
    }

    /// A plan no longer tracked.
    pub(super) fn forget(&mut self, source: &Source) {
        self.kept.retain(|k| &k.source != source);
    }
}

fn status_of(c: u8) -> Option<StepStatus> {
    match c {
        b' ' => Some(StepStatus::Open),
        b'x' | b'X' => Some(StepStatus::Checked),
        _ => None,
    }
}

/// Whether `a` and `b` (of one length) differ only at `boxes`, where `b`
/// holds a checkbox character.
fn same_but_boxes(a: &[u8], b: &[u8], boxes: &[usize]) -> bool {
    let mut from = 0;
    for &at in boxes {
        if a[from..at] != b[from..at] || status_of(b[at]).is_none() {
            return false;
        }
        from = at + 1;
    }
    a[from..] == b[from..]
}

/// Where each step's checkbox character is in `text`: on the step's line,
/// after its list marker, the first `[` (the parser took the line for a
/// step, so only indentation and the marker come before it). `None` when
/// a step's line does not hold the checkbox its status says.
fn boxes(text: &[u8], plan: &Plan) -> Option<Vec<usize>> {
    let mut out = Vec::with_capacity(plan.steps.len());
    let mut lines = text.split(|&b| b == b'\n').enumerate();
    let mut start = 0;
    for step in &plan.steps {
        let (line, at) = loop {
            let (n, line) = lines.next()?;
            let at = start;
            start += line.len() + 1;
            if n + 1 == step.line {
                break (line, at);
            }
        };
        let open = line.iter().position(|&b| b == b'[')?;
        let c = *line.get(open + 1)?;
        if line.get(open + 2) != Some(&b']') || status_of(c) != Some(step.status) {
            return None;
        }
        out.push(at + open + 1);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::core::plan::{parse_plan, PlanFormat};

    fn parse(text: &str) -> Plan {
        parse_plan(PlanFormat::Markdown, text.as_bytes(), 1 << 20).unwrap()
    }

    const PLAN: &str = "\u{feff}# Goal\n\n<!-- session: s1 -->\n\n- [ ] One [a]\n  about [b]\n* [x] Two (after: none)\n\n1. [ ] Three\r\n  after: 1\n";

    fn kept() -> (Recent, Source) {
        let mut recent = Recent::default();
        let source = Source::Plan("p".into());
        recent.keep(&source, PLAN.as_bytes().to_vec(), parse(PLAN));
        (recent, source)
    }

    #[test]
    fn a_checkbox_flip_is_the_kept_parse_with_new_statuses() {
        let flipped = PLAN
            .replace("- [ ] One", "- [X] One")
            .replace("* [x] Two", "* [ ] Two")
            .replace("1. [ ] Three", "1. [x] Three");
        let (mut recent, source) = kept();
        let plan = recent.take(&source, flipped.as_bytes()).unwrap();
        assert_eq!(plan, parse(&flipped));
        // Taken out until kept again.
        assert!(recent.take(&source, flipped.as_bytes()).is_none());
        recent.keep(&source, flipped.clone().into_bytes(), plan);
        let back = PLAN.replace("* [x] Two", "* [X] Two");
        assert_eq!(recent.take(&source, back.as_bytes()), Some(parse(&back)));
    }

    #[test]
    fn the_same_text_is_the_same_parse() {
        let (mut recent, source) = kept();
        assert_eq!(recent.take(&source, PLAN.as_bytes()), Some(parse(PLAN)));
    }

    #[test]
    fn any_other_change_is_parsed_again() {
        let changes = [
            PLAN.replace("One [a]", "One [b]"),
            PLAN.replace("about [b]", "about [x]"),
            PLAN.replace("- [ ] One", "- [-] One"),
            PLAN.replace("# Goal", "# Gaol"),
            PLAN.replace("s1", "s2"),
            PLAN.replace("Three", "Three "),
        ];
        for text in changes {
            let (mut recent, source) = kept();
            assert!(recent.take(&source, text.as_bytes()).is_none(), "{text:?}");
        }
        let (mut recent, _) = kept();
        let other = Source::Plan("q".into());
        assert!(recent.take(&other, PLAN.as_bytes()).is_none());
    }

    /// A plan's lines, drawn from pieces that make steps, descriptions,
    /// annotations, prose and brackets in odd places.
    fn arb_text() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            Just("- [ ] a".to_string()),
            Just("- [x] a".to_string()),
            Just("* [X] b [ ]".to_string()),
            Just("1. [ ] c (after: 1)".to_string()),
            Just("  [x] not a step".to_string()),
            Just("  after: 2".to_string()),
            Just("-[ ] no".to_string()),
            Just("```".to_string()),
            Just("# g".to_string()),
            Just(String::new()),
            "[a-c \\[\\]x-]{0,8}",
        ];
        proptest::collection::vec(line, 0..12).prop_map(|l| l.join("\n"))
    }

    proptest! {
        /// Whatever the kept text and the new one, a parse `take` hands
        /// back is exactly the parse of the new text.
        #[test]
        fn a_taken_parse_is_the_parse(
            text in arb_text(),
            rounds in proptest::collection::vec(proptest::collection::vec((any::<prop::sample::Index>(), prop_oneof![Just(b' '), Just(b'x'), Just(b'X'), Just(b'-'), Just(b'[')]), 0..4), 1..4),
        ) {
            let Ok(plan) = parse_plan(PlanFormat::Markdown, text.as_bytes(), 1 << 20) else {
                return Ok(());
            };
            let mut recent = Recent::default();
            let source = Source::Plan("p".into());
            recent.keep(&source, text.clone().into_bytes(), plan);
            let mut new = text.into_bytes();
            // Rounds of edits, each read as the daemon does: taken if it
            // can be, else parsed, and kept.
            for edits in rounds {
                // Each edit lands between a pair of brackets when there is
                // one (a checkbox or not), so ticks are tried as often as
                // the rest.
                let pairs: Vec<usize> = (1..new.len().saturating_sub(1))
                    .filter(|&i| new[i - 1] == b'[' && new[i + 1] == b']')
                    .collect();
                for (n, (at, b)) in edits.into_iter().enumerate() {
                    let i = match (n % 2, pairs.is_empty(), new.is_empty()) {
                        (0, false, _) => pairs[at.index(pairs.len())],
                        (_, _, false) => at.index(new.len()),
                        _ => continue,
                    };
                    new[i] = b;
                }
                let parsed = parse_plan(PlanFormat::Markdown, &new, 1 << 20);
                let plan = match recent.take(&source, &new) {
                    Some(taken) => {
                        prop_assert_eq!(Ok(&taken), parsed.as_ref());
                        taken
                    }
                    None => match parsed {
                        Ok(plan) => plan,
                        Err(_) => continue,
                    },
                };
                recent.keep(&source, new.clone(), plan);
            }
        }
    }

    #[test]
    fn at_most_keep_plans_are_kept_and_forget_drops_one() {
        let mut recent = Recent::default();
        let plan = parse(PLAN);
        for n in 0..KEEP + 3 {
            recent.keep(&Source::Plan(n.to_string()), PLAN.into(), plan.clone());
        }
        assert_eq!(recent.kept.len(), KEEP);
        let big = format!("{PLAN}{}\n", " ".repeat(KEEP_BYTES));
        let source = Source::Plan("big".into());
        recent.keep(&source, big.clone().into_bytes(), parse(&big));
        assert!(
            recent.take(&source, big.as_bytes()).is_none(),
            "too big to keep"
        );
        assert!(recent
            .take(&Source::Plan("0".into()), PLAN.as_bytes())
            .is_none());
        let last = Source::Plan((KEEP + 2).to_string());
        recent.forget(&last);
        assert!(recent.take(&last, PLAN.as_bytes()).is_none());
        let kept = Source::Plan((KEEP + 1).to_string());
        assert!(recent.take(&kept, PLAN.as_bytes()).is_some());
    }
}

//! What the real server does that a waker must respect and the ollie-9p
//! double (`doubles::ollie`) copies, checked on the real thing: if upstream
//! changes, these fail, and the double's self-tests (tests/doubles/ollie.rs)
//! say where it must follow. No reveille here.

use std::path::Path;

use super::{AGENT, T};
use crate::util::realollie::{put, Options, RealOllie};
use crate::util::wait_until;

fn server() -> Option<RealOllie> {
    let ollie = crate::util::realollie::start_or_skip(Options { fake_delay: 0.05 })?;
    ollie.create(AGENT, &ollie.work());
    Some(ollie)
}

/// Queues `item 1` … `item n` on `id` while its agent is busy with a long
/// turn, lets `look` do its worst, and returns the items that ran after
/// the turn (the ones `look` did not pop).
fn survivors(ollie: &RealOllie, id: &str, n: usize, look: impl FnOnce(&Path)) -> Vec<String> {
    ollie.submit(id, "hold the queue delay=0.6");
    ollie.wait_turn("hold the queue", T);
    for i in 1..=n {
        ollie.queue(id, &format!("item {i}"));
    }
    look(&ollie.session_dir(id));
    let turns = ollie.wait_quiet(T);
    turns
        .into_iter()
        .map(|t| t.prompt)
        .filter(|p| p.starts_with("item "))
        .collect()
}

#[test]
fn a_stat_of_fifo_out_pops_three_queued_prompts() {
    let Some(ollie) = server() else {
        return;
    };
    let ran = survivors(&ollie, AGENT, 7, |dir| {
        std::fs::metadata(dir.join("fifo.out")).unwrap();
    });
    // The walk pops one, 9pfuse's Tstat two (the double: files.rs
    // `lookup_fifo_out`).
    assert_eq!(
        ran,
        ["item 4", "item 5", "item 6", "item 7"],
        "{}",
        ollie.describe()
    );
}

#[test]
fn a_listing_of_a_session_has_no_types_so_asking_for_them_pops_three() {
    let Some(ollie) = server() else {
        return;
    };
    let ran = survivors(&ollie, AGENT, 7, |dir| {
        let entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(entries.iter().any(|e| e.file_name() == "fifo.out"));
        assert!(
            !entries.iter().any(|e| e.file_name() == ".."),
            "9pfuse lists . only"
        );
        // The names alone cost nothing; their types cost a lookup each.
        for entry in &entries {
            entry.file_type().unwrap();
        }
    });
    assert_eq!(
        ran,
        ["item 4", "item 5", "item 6", "item 7"],
        "{}",
        ollie.describe()
    );
}

#[test]
fn idx_shows_the_backend_by_a_display_name_that_s_new_refuses() {
    let Some(ollie) = server() else {
        return;
    };
    let row = ollie.row(AGENT).unwrap();
    assert_eq!(row.backend, "local", "{row:?}");
    let work = ollie.work().display().to_string();
    put(
        &ollie.sessions_dir().join("new"),
        &format!("name=copy cwd={work} backend=local"),
    );
    wait_until("the refusal in olliesrv's log", T, || {
        ollie
            .server_log()
            .contains("unknown OLLIE_BACKEND \"local\"")
            .then_some(())
    });
    assert!(ollie.row("copy").is_none(), "{:?}", ollie.idx());
    put(
        &ollie.sessions_dir().join("new"),
        &format!("name=named cwd={work} backend=openai"),
    );
    assert_eq!(ollie.wait_listed("named", T).backend, "local");
}

#[test]
fn right_after_a_kill_the_old_path_opens_and_swallows_a_prompt() {
    let Some(ollie) = server() else {
        return;
    };
    let dir = ollie.session_dir(AGENT);
    // Only what the kernel looked up in the last second still resolves
    // (as `prompt` has been for a waker that delivered there before).
    assert!(dir.join("prompt").is_file());
    ollie.kill(AGENT);
    assert!(dir.is_dir(), "the kernel's entry still resolves");
    put(&dir.join("prompt"), "into the void");
    ollie.create("other", &ollie.work());
    ollie.submit("other", "after the void");
    ollie.wait_turn("after the void", T);
    let turns = ollie.wait_quiet(T);
    assert_eq!(
        turns.len(),
        1,
        "the prompt to the killed session ran: {turns:?}"
    );
    wait_until("the killed session's directory to go", T, || {
        (!dir.exists()).then_some(())
    });
}

#[test]
fn right_after_a_rename_the_old_path_reaches_the_renamed_session() {
    let Some(ollie) = server() else {
        return;
    };
    let old = ollie.session_dir(AGENT);
    ollie.chat(AGENT); // the kernel has looked the directory up
    assert!(ollie.rename(AGENT, "renamed"));
    put(&old.join("prompt"), "through the old name");
    ollie.wait_turn("through the old name", T);
    wait_until("the renamed session busy or done", T, || {
        let chat = ollie.chat("renamed");
        chat.contains("through the old name").then_some(())
    });
}

//! One `#[test]` per (scenario, kind) that applies: `conformance::cells::
//! <scenario>::<kind>`. The cells left out are the ones whose driver says
//! why not (`Err(reason)`); doc/TESTING.md's matrix lists both.

use super::kinds::{
    claude::Claude, codex::Codex, ollie::Ollie, ollie_double::OllieDouble, opencode::Opencode,
    pipe::Pipe,
};

macro_rules! cells {
    ($( $scenario:ident { $( $(#[$attr:meta])* $kind:ident : $ty:ty ),* $(,)? } )*) => {
        $(
            mod $scenario {
                #[allow(unused_imports)]
                use super::*;
                $(
                    #[test]
                    $(#[$attr])*
                    fn $kind() {
                        crate::conformance::scenarios::$scenario::run::<$ty>();
                    }
                )*
            }
        )*
        /// Every (scenario, kind) with a test.
        pub const CELLS: &[(&str, &str)] = &[
            $( $( (stringify!($scenario), stringify!($kind)), )* )*
        ];
    };
}

cells! {
    idle_wake {
        ollie: Ollie,
        ollie_double: OllieDouble,
        pipe: Pipe,
        codex: Codex,
        claude: Claude,
        opencode: Opencode,
    }
    busy_queue {
        ollie: Ollie,
        ollie_double: OllieDouble,
        codex: Codex,
        claude: Claude,
        opencode: Opencode,
    }
    short_turns {
        ollie: Ollie,
        ollie_double: OllieDouble,
        codex: Codex,
        claude: Claude,
        opencode: Opencode,
    }
    failed_confirmation {
        ollie_double: OllieDouble,
        codex: Codex,
        claude: Claude,
        opencode: Opencode<true>,
    }
    flapping {
        ollie: Ollie,
        ollie_double: OllieDouble,
        codex: Codex,
        claude: Claude,
        opencode: Opencode,
    }
    prompt_race {
        ollie: Ollie,
        ollie_double: OllieDouble,
        codex: Codex,
        #[ignore = "upstream: Claude Code merges messages waiting together in its inbox; the \
                    person's and reveille's step went out as one user message (reveille cannot \
                    see another client's queued inbox messages)"]
        claude: Claude,
        opencode: Opencode,
    }
    restart {
        pipe: Pipe,
        codex: Codex,
        claude: Claude,
        opencode: Opencode,
    }
    slow_answer {
        ollie_double: OllieDouble,
        codex: Codex,
        claude: Claude,
        opencode: Opencode<true>,
    }
    waiting_reason {
        ollie: Ollie,
        ollie_double: OllieDouble,
        pipe: Pipe,
        codex: Codex,
        claude: Claude,
        opencode: Opencode,
    }
}

//! The configuration's enums and their spellings in the config file
//! (`project.mode`, `sessions.framing`, `sessions.delivery`,
//! `log.target`): each enum exists once, defined here or in the part of
//! the program that owns it.

use std::fmt;
use std::str::FromStr;

pub use crate::core::engine::Mode;

/// The spellings of a configuration enum in the config file: `NAMES`,
/// `as_str`, `FromStr` and `Display` for an enum defined here or in the
/// part of the program that owns it (each enum exists once).
macro_rules! config_names {
    ($name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        impl $name {
            /// The accepted spellings, in order.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// How the value is written in the configuration.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(format!("expected one of {}", Self::NAMES.join(", "))),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// Defines a configuration enum with its spelling in the config file; the
/// first spelling is the default.
macro_rules! config_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vdoc])* $variant),+ }

        config_names!($name { $($variant = $text),+ });

        impl Default for $name {
            fn default() -> Self {
                Self::NAMES[0].parse().expect("the first name parses")
            }
        }
    };
}

// `project.mode`: the engine's own enum.
config_names!(Mode {
    Reactive = "reactive",
    Queue = "queue",
});

config_enum! {
    /// `sessions.framing`: how prompts are separated in the enqueue file.
    Framing {
        /// `message` for regular and FUSE/9P files, `nul` for named pipes.
        Auto = "auto",
        /// One open, one write, one close per prompt.
        Message = "message",
        /// The prompt followed by one NUL byte.
        Nul = "nul",
        /// One JSON object per line (`prompt`, `plan`, `step`, `session`).
        Jsonl = "jsonl",
    }
}

config_enum! {
    /// `sessions.delivery`: how a prompt reaches a session.
    Delivery {
        /// Submit (`prompt`) to ollie-9p sessions, recognised by what their
        /// directory holds, so an idle agent starts a turn; the enqueue
        /// file for every other session.
        Auto = "auto",
        /// Always the enqueue file (for ollie-9p: queue only — an idle
        /// agent does not start on it).
        Enqueue = "enqueue",
    }
}

config_enum! {
    /// `notify.desktop`: desktop notifications over the user's D-Bus
    /// session bus.
    Desktop {
        /// When a session bus is there.
        Auto = "auto",
        /// Always (a missing bus is logged).
        On = "on",
        /// Never.
        Off = "off",
    }
}

config_enum! {
    /// `log.target`: where logs go.
    LogTarget {
        /// journald when `JOURNAL_STREAM` matches stderr, else stderr.
        Auto = "auto",
        /// Always journald, with structured fields.
        Journald = "journald",
        /// Always human-readable on stderr.
        Stderr = "stderr",
    }
}

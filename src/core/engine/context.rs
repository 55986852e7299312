//! The context a part of the engine works in while it handles an input:
//! what it may use of the engine besides its own state.

use super::config::EngineConfig;
use super::ledger::Ledger;
use super::timers::Timers;
use crate::core::effect::Effect;

/// What a part may use of the engine while it handles an input.
pub(super) struct Cx<'a> {
    pub(super) config: &'a EngineConfig,
    pub(super) ledger: &'a mut Ledger,
    pub(super) timers: &'a mut Timers,
    pub(super) fx: &'a mut Vec<Effect>,
    /// A first start until `StartupDone`: what is ready is recorded as the
    /// baseline, not announced.
    pub(super) baseline: bool,
}

/// The `Cx` of an engine's own fields: the coordinator builds one per
/// step (parts' state and the context are disjoint borrows of it).
macro_rules! cx {
    ($engine:expr, $fx:expr) => {
        $crate::core::engine::context::Cx {
            config: &$engine.config,
            ledger: &mut $engine.ledger,
            timers: &mut $engine.timers,
            fx: $fx,
            baseline: $engine.baseline,
        }
    };
}
pub(super) use cx;

//! Where a plan's prompts go: the session its file names, else its
//! session directory's, else the project's default — validated, and said
//! once when there is none.

use super::{Origin, Plans};
use crate::core::effect::{Effect, Level, Log};
use crate::core::engine::context::Cx;
use crate::core::lines::quoted;
use crate::core::session::check_session;
use crate::core::source::Source;

impl Plans {
    /// The session a plan's wake-ups go to, if any.
    pub(super) fn route(&mut self, source: &Source, cx: &mut Cx) -> Option<String> {
        let state = self.plans.get_mut(source)?;
        let from_file = state.summary.as_ref().and_then(|p| p.session.clone());
        let session = from_file
            .or_else(|| match &state.origin {
                Origin::Session(s) => Some(s.clone()),
                _ => None,
            })
            .or_else(|| cx.config.default_session.clone());
        match session {
            Some(s) => match check_session(&s) {
                Ok(()) => Some(s),
                Err(why) => {
                    if !state.warned_route {
                        state.warned_route = true;
                        cx.fx.push(Effect::Log(
                            Log::new(
                                Level::Error,
                                format!("plan {}: session id {} {why}; it wakes nobody until it is fixed", state.path.display(), quoted(&s)),
                            )
                            .plan(source)
                            .plan_file(&state.path),
                        ));
                    }
                    None
                }
            },
            None => {
                if !state.warned_route {
                    state.warned_route = true;
                    cx.fx.push(Effect::Log(
                        Log::new(
                            Level::Warn,
                            format!("plan {} has no session (no session comment, no session directory, no default_session); it is tracked but wakes nobody", state.path.display()),
                        )
                        .plan(source)
                        .plan_file(&state.path),
                    ));
                }
                None
            }
        }
    }
}

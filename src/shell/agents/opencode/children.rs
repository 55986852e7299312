//! Child sessions for fan-out: `POST /session` with the parent's id as
//! `parentID` (so opencode shows the child under its parent) in the
//! parent's directory, and a title derived from the engine's child name —
//! opencode chooses the id itself, so a create repeated after a crash
//! finds the child by that title among the parent's children
//! (`GET /session/:id/children`) instead of making a second one. Reaping
//! aborts a running turn, then deletes the session.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::api::{Api, ApiError};
use super::deliver::session_id;
use super::followed::Shared;
use crate::core::effect::Spawn;
use crate::core::input::Input;
use crate::core::session::{AgentState, Kind};

/// The title of the child the engine calls `child`.
pub fn title(child: &str) -> String {
    format!("reveille child {child}")
}

/// Create (or find) the child `spawn` asks for; the answer to report.
pub fn spawn(api: &Api, shared: &Arc<Shared>, spawn: &Spawn) -> Input {
    let outcome = create(api, shared, spawn);
    let (child, outcome) = match outcome {
        Ok(id) => (Kind::Opencode.qualify(&id), Ok(now_ms())),
        Err(why) => (spawn.child.clone(), Err(why)),
    };
    Input::ChildSpawned { child, outcome }
}

/// The bare id of the child, found or made.
fn create(api: &Api, shared: &Arc<Shared>, spawn: &Spawn) -> Result<String, String> {
    let parent = session_id(&spawn.parent)?;
    let info = api.session(parent).map_err(|e| e.to_string())?;
    let title = title(&spawn.child);
    let found = api
        .children(parent)
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|c| c.title == title);
    let child = match found {
        Some(c) => c,
        None => api
            .create(&info.directory, parent, &title)
            .map_err(|e| e.to_string())?,
    };
    let mut f = shared.lock();
    f.learn(&child.id);
    f.set_directory(&child.id, &child.directory);
    Ok(child.id)
}

/// Kill child `child` (qualified): abort its turn if one runs, delete it.
/// A child that cannot be deleted stays followed (its state says it is
/// there) and the journal says why.
pub fn reap(api: &Api, shared: &Arc<Shared>, child: &str, project: &str) {
    let failed = |why: String| {
        tracing::warn!(project = %project, session = %child, "cannot reap child session {child}: {why}");
    };
    let id = match session_id(child) {
        Ok(id) => id,
        Err(why) => return failed(why),
    };
    let info = match api.session(id) {
        Ok(info) => info,
        Err(ApiError::NoSession(_)) => return gone(shared, id),
        Err(e) => return failed(e.to_string()),
    };
    if api
        .state(id, &info.directory)
        .is_ok_and(|s| s != AgentState::Idle)
    {
        if let Err(e) = api.abort(id) {
            return failed(format!("its turn could not be aborted: {e}"));
        }
    }
    match api.delete(id) {
        Ok(()) | Err(ApiError::NoSession(_)) => gone(shared, id),
        Err(e) => failed(e.to_string()),
    }
}

/// The child is no more: reported `None`, no longer followed.
fn gone(shared: &Arc<Shared>, id: &str) {
    let mut f = shared.lock();
    f.learn(id);
    f.state(id, None);
    f.forget(id);
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

//! Child sessions for fan-out: `POST /session` with the parent's id as
//! `parentID` (so opencode shows the child under its parent) in the
//! parent's directory, and a title derived from the engine's name for the
//! child (`names::child_title`) — opencode chooses the id itself, so the
//! child is found again by that title among the parent's children
//! (`GET /session/:id/children`): a create repeated after a crash finds it
//! instead of making a second, and after a restart of reveille the
//! engine's name leads to it again. It is reported, and followed, under
//! the engine's name. Reaping aborts a running turn, then deletes the
//! session.

use std::sync::Arc;

use super::api::{Api, ApiError, SessionInfo};
use super::followed::Shared;
use super::names::{self, Name};
use super::watch;
use crate::core::effect::Spawn;
use crate::core::input::Input;
use crate::core::session::AgentState;

/// Create (or find) the child `spawn` asks for, and report it: created
/// (under the engine's name), then its state.
pub fn spawn(api: &Api, shared: &Arc<Shared>, spawn: &Spawn) {
    let outcome = create(api, shared, spawn);
    let made = outcome.as_ref().ok().cloned();
    let input = Input::ChildSpawned {
        child: spawn.child.clone(),
        outcome: outcome.map(|_| crate::shell::wall::unix_ms()),
    };
    shared.lock().send(input);
    if let Some(id) = made {
        // A new session says nothing of itself until a turn runs: its
        // idle is what lets the engine give it its prompt. A server gone
        // meanwhile is seen by the follower, whose reconnection refreshes
        // every followed session.
        let _ = watch::refresh_one(api, shared, &id);
    }
}

/// The bare id of the child, found or made, followed under its name.
fn create(api: &Api, shared: &Arc<Shared>, spawn: &Spawn) -> Result<String, String> {
    let parent = match names::parse(&spawn.parent)? {
        Name::Own(id) => id,
        Name::Child { .. } => {
            return Err(format!(
                "{} is itself a child: reveille makes no grandchildren",
                spawn.parent
            ))
        }
    };
    if let Some(id) = find(api, shared, &spawn.child, parent).map_err(|e| e.to_string())? {
        return Ok(id);
    }
    let info = api.session(parent).map_err(|e| e.to_string())?;
    let child = api
        .create(&info.directory, parent, &names::child_title(&spawn.child))
        .map_err(|e| e.to_string())?;
    follow(shared, &child, &spawn.child);
    Ok(child.id)
}

/// The id of the child the engine calls `name`, under `parent`: known, or
/// found by its title (and followed from now on); `None` if the parent has
/// no such child.
pub fn find(
    api: &Api,
    shared: &Arc<Shared>,
    name: &str,
    parent: &str,
) -> Result<Option<String>, ApiError> {
    if let Some(id) = shared.lock().find(name) {
        return Ok(Some(id));
    }
    let title = names::child_title(name);
    let found = api.children(parent)?.into_iter().find(|c| c.title == title);
    Ok(found.map(|child| {
        follow(shared, &child, name);
        child.id
    }))
}

fn follow(shared: &Arc<Shared>, child: &SessionInfo, name: &str) {
    let mut f = shared.lock();
    f.learn(&child.id);
    f.call(&child.id, name);
    f.set_directory(&child.id, &child.directory);
}

/// Kill the child `name` whose own id is `id`: abort its turn if one runs,
/// delete it. A child that cannot be deleted stays followed (its state
/// says it is there) and the journal says why.
pub fn reap(api: &Api, shared: &Arc<Shared>, id: &str, name: &str, project: &str) {
    let failed = |why: String| {
        tracing::warn!(project = %project, session = %name, "cannot reap child session {name} ({id}): {why}");
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
    f.state(id, None);
    f.forget(id);
}

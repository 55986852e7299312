//! STUB (replaced by the plan branch).
use serde::Serialize;
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileState { Todo, Wip, Done, Abandoned }
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanName { pub stamp: String, pub uid: String, pub slug: String, pub state: FileState }
impl PlanName { pub fn id(&self) -> String { format!("{}_{}", self.stamp, self.uid) } }
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanFile { Markdown(PlanName), Json { stem: String } }
pub fn classify(file_name: &str) -> Option<PlanFile> {
    if let Some(stem) = file_name.strip_suffix(".plan.json") { return Some(PlanFile::Json { stem: stem.into() }); }
    let base = file_name.strip_suffix(".md")?;
    let (head, state) = base.rsplit_once("__")?;
    let state = match state { "todo" => FileState::Todo, "wip" => FileState::Wip, "done" => FileState::Done, "abandoned" => FileState::Abandoned, _ => return None };
    let (id, slug) = head.split_once("--")?;
    let (stamp, uid) = id.split_once('_')?;
    Some(PlanFile::Markdown(PlanName { stamp: stamp.into(), uid: uid.into(), slug: slug.into(), state }))
}

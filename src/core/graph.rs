//! STUB (replaced by the plan branch).
use super::plan::{Plan, StepStatus};
impl Plan {
    pub fn ready(&self) -> Vec<usize> {
        (0..self.steps.len()).filter(|&i| self.steps[i].status == StepStatus::Open && self.steps[i].deps.iter().all(|&d| self.steps[d].status == StepStatus::Checked)).collect()
    }
    pub fn topo_order(&self) -> Vec<usize> { (0..self.steps.len()).collect() }
    pub fn all_checked(&self) -> bool { !self.steps.is_empty() && self.steps.iter().all(|s| s.status == StepStatus::Checked) }
}

//! STUB (replaced by the plan branch).
use super::plan::{Plan, PlanError};
pub fn parse(_text: &str) -> Result<Plan, PlanError> { Err(PlanError { line: 0, message: "plan.json not supported yet".into() }) }

//! A step that becomes ready a moment after a person's prompts were sent
//! by another client — before the program shows them (a program shows a
//! prompt busy some 10–200 ms after it was sent). The step must still run
//! once, as its own turn, and not be lost.

use super::flapping::{person_prompts, step_among_them};
use crate::conformance::{Kind, TICKING};

pub fn run<K: Kind>() {
    let Some(k) = K::start(TICKING, &|_| {}) else {
        return;
    };
    person_prompts(&k);
    step_among_them(&k);
}

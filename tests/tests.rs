//! The one integration-test binary (`autotests = false`): every module here
//! is a group of tests, `util` is their shared harness.

mod config_example;
mod hostile;
mod systemd;
mod util;

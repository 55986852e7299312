//! The one integration-test binary (`autotests = false`): each module below
//! exercises the library or the real daemon from outside.

mod config_example;

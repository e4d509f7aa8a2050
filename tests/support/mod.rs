//! Shared fixtures for the console tests.
#![allow(dead_code)]

pub mod cli;
pub mod console;
pub mod gateway;
pub mod hostile;
pub mod packets;
pub mod planted;
pub mod provider;
pub mod review;
#[macro_use]
pub mod stores;

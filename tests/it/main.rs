//! The integration tests: one binary, one module per topic. Every test writes its own workbooks
//! (rust_xlsxwriter) into a temporary folder and runs the real `roce-gen` binary on them.

mod alerts;
mod aliases;
mod bombs;
mod cli;
mod common;
mod config;
mod dashboard;
mod delivery;
mod docs;
mod dryrun;
mod fabric;
mod fakehost;
mod field;
mod firmware;
mod formats;
mod generate;
mod golden;
mod health;
mod hosts;
mod identity;
mod ingest;
mod linkwait;
mod malformed;
mod monitor;
mod netmgr;
mod output;
mod pxe;
mod rdma;
mod reload;
mod rules;
mod scenarios;
mod scripts;
mod summary;
mod verdict;
mod verify;

//! `ingest`: result files written by the host bundles become one cluster report. A pipeline of
//! its own, pure except at its two ends:
//!
//! 1. [`collect`] (I/O) finds every candidate file under the given paths, also inside `.tar.gz`
//!    archives, and reads its bytes;
//! 2. [`result`] parses one file's bytes as a `roce-gen/result/v1` result, or says why it is not
//!    one; [`intake`] reads every file found and keeps, per host and phase, the newest result;
//! 3. [`verdict`] gives each host its state and the cluster its verdict, with and without a
//!    plan, as a [`report`] (the types every format reads); [`consistency`] groups the facts that
//!    should agree across hosts, [`attention`] the warnings and drift by check, [`fabric`] the
//!    fabric matrix, [`gpu`] the GPU path per host;
//! 4. [`render`] prints the report as text, JSON, Markdown, JUnit XML, Prometheus text or HTML;
//!    [`metrics`] names the Prometheus series (the dashboard queries them).
//!
//! `cmd/ingest.rs` loads the plan, runs the stages and writes the output.

pub(crate) mod attention;
pub(crate) mod collect;
pub(crate) mod consistency;
pub(crate) mod fabric;
pub(crate) mod gpu;
pub(crate) mod intake;
pub(crate) mod metrics;
pub(crate) mod render;
pub(crate) mod report;
pub(crate) mod result;
pub(crate) mod verdict;

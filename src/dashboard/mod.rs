//! The Grafana dashboard of `roce-gen dashboard`: the board over the series names of
//! [`crate::ingest::metrics`] ([`board`], pure), the API key and where it may be sent ([`key`]),
//! and the upload through Grafana's HTTP API ([`push`], the only network access of roce-gen).
//! `cmd::dashboard` merges the command line with the config and prints.

pub(crate) mod board;
pub(crate) mod key;
pub(crate) mod push;

//! `--format json`: the report as one JSON document, schema `roce-gen/ingest/v1`. The fields are
//! the report's own (`report.rs` documents each), plus `schema` and `tool_version` first. Strings
//! are the results' own, unaltered: `cmd/ingest.rs` writes the document through
//! `cmd::console::json`, which writes every control and bidi character as a `\u` escape, so
//! the bytes are safe on a terminal and a JSON reader gets the exact text. Fields are only ever
//! added within v1.

use serde::Serialize;

use crate::ingest::report::ClusterReport;

/// Schema tag of `ingest --format json`.
pub(crate) const INGEST_SCHEMA: &str = "roce-gen/ingest/v1";

/// The document: the report under its schema tag.
#[derive(Serialize)]
pub(crate) struct Document<'a> {
    schema: &'static str,
    tool_version: &'static str,
    #[serde(flatten)]
    report: &'a ClusterReport,
}

/// The report as the JSON document.
pub(crate) fn document(report: &ClusterReport) -> Document<'_> {
    Document {
        schema: INGEST_SCHEMA,
        tool_version: env!("CARGO_PKG_VERSION"),
        report,
    }
}

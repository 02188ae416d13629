//! `--format json`: the report as one JSON document, schema `roce-gen/ingest/v1`. The fields are
//! the report's own (`report.rs` documents each), plus `schema` and `tool_version` first. Strings
//! are the results' own, unaltered (JSON escapes them). Fields are only ever added within v1.

use anyhow::Result;
use serde::Serialize;

use crate::ingest::report::ClusterReport;

/// Schema tag of `ingest --format json`.
pub(crate) const INGEST_SCHEMA: &str = "roce-gen/ingest/v1";

#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    tool_version: &'static str,
    #[serde(flatten)]
    report: &'a ClusterReport,
}

/// The report as pretty-printed JSON with a trailing newline.
pub(crate) fn render(report: &ClusterReport) -> Result<String> {
    let mut text = serde_json::to_string_pretty(&Document {
        schema: INGEST_SCHEMA,
        tool_version: env!("CARGO_PKG_VERSION"),
        report,
    })?;
    text.push('\n');
    Ok(text)
}

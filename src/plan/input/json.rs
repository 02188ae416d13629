//! Reads the normalized JSON plan (what `roce-gen plan` prints) into the same [`RawPlan`] as a
//! workbook, so that a JSON plan passes exactly the same rules. Locations are JSON paths such as
//! `hosts[2].nics[0].ip`.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde_json::{Map, Value as Json};

use crate::plan::diagnostic::{Diagnostic, Report};
use crate::plan::input::raw::{Cell, RawPlan, Row, Table, Value};
use crate::plan::layout::{NICS, SERVERS, Sheet};
use crate::plan::location::Location;
use crate::plan::model::PLAN_SCHEMA;

/// Reads a JSON plan. Fails only when the bytes are not JSON; a wrong shape is a diagnostic.
pub(crate) fn read(bytes: &[u8]) -> Result<RawPlan> {
    // Windows editors save with a byte order mark: UTF-8's is skipped, UTF-16 is not JSON.
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        anyhow::bail!("the file is saved as UTF-16; save it as UTF-8");
    }
    let bytes = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(bytes);
    let doc: Json = serde_json::from_slice(bytes).context("not valid JSON")?;
    let mut plan = RawPlan::default();
    let report = &mut plan.report;
    let Some(top) = doc.as_object() else {
        report.push(Diagnostic::error(
            Location::File,
            "a JSON plan must be an object",
        ));
        return Ok(plan);
    };
    match top.get("schema") {
        None => {}
        Some(Json::String(s)) if s == PLAN_SCHEMA => {}
        Some(other) => report.push(Diagnostic::error(
            at("schema"),
            format!("schema is {other}, expected \"{PLAN_SCHEMA}\""),
        )),
    }
    for key in top
        .keys()
        .filter(|k| !["schema", "cluster", "hosts"].contains(&k.as_str()))
    {
        report.push(Diagnostic::note(
            at(key),
            "member is not part of the plan and is ignored",
        ));
    }
    plan.cluster = object_member(top, "cluster", report).map(|cluster| Table {
        location: at("cluster"),
        rows: cluster
            .iter()
            .map(|(key, value)| {
                let path = format!("cluster.{key}");
                Row {
                    owner: None,
                    cells: BTreeMap::from([
                        (
                            "key",
                            Cell {
                                value: Value::Text(key.clone()),
                                location: at(&path),
                            },
                        ),
                        ("value", cell(value, &path)),
                    ]),
                }
            })
            .collect(),
    });
    let Some(hosts) = array_member(top, "hosts", report) else {
        return Ok(plan);
    };
    let mut servers = Vec::new();
    let mut nics = Vec::new();
    for (i, host) in hosts.iter().enumerate() {
        let path = format!("hosts[{i}]");
        let Some(host) = host.as_object() else {
            report.push(Diagnostic::error(at(&path), "a host must be an object"));
            continue;
        };
        servers.push(row(&SERVERS, host, &path, &["nics"], report));
        let Some(list) = array_member(host, "nics", report).map(|l| (l, format!("{path}.nics")))
        else {
            continue;
        };
        for (j, nic) in list.0.iter().enumerate() {
            let nic_path = format!("{}[{j}]", list.1);
            let Some(nic) = nic.as_object() else {
                report.push(Diagnostic::error(at(&nic_path), "a NIC must be an object"));
                continue;
            };
            let mut nic_row = row(&NICS, nic, &nic_path, &["hostname"], report);
            nic_row.owner = Some(servers.len() - 1);
            // A NIC belongs to the host it is listed under.
            let hostname = host.get("hostname").unwrap_or(&Json::Null);
            nic_row
                .cells
                .insert("hostname", cell(hostname, &format!("{path}.hostname")));
            nics.push(nic_row);
        }
    }
    plan.servers = Some(Table {
        location: at("hosts"),
        rows: servers,
    });
    plan.nics = Some(Table {
        location: at("hosts"),
        rows: nics,
    });
    Ok(plan)
}

fn at(path: &str) -> Location {
    Location::Json {
        path: path.to_string(),
    }
}

/// One row with a cell for every column of `sheet`, absent members as empty cells.
fn row(
    sheet: &Sheet,
    object: &Map<String, Json>,
    path: &str,
    skip: &[&str],
    report: &mut Report,
) -> Row {
    for key in object.keys() {
        if !sheet.columns.iter().any(|c| c.name == key) && !skip.contains(&key.as_str()) {
            let location = at(&format!("{path}.{key}"));
            report.push(Diagnostic::note(
                location,
                "member is not part of the plan and is ignored",
            ));
        }
    }
    let cells = sheet
        .columns
        .iter()
        .filter(|c| !skip.contains(&c.name))
        .map(|c| {
            (
                c.name,
                cell(
                    object.get(c.name).unwrap_or(&Json::Null),
                    &format!("{path}.{}", c.name),
                ),
            )
        })
        .collect();
    Row { cells, owner: None }
}

/// A JSON value as a cell: scalars as they are, a list of scalars as comma-separated text.
fn cell(value: &Json, path: &str) -> Cell {
    let scalar = |v: &Json| match v {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        Json::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let value = match value {
        Json::Null => Value::Empty,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => n.as_f64().map_or(Value::Text(n.to_string()), Value::Number),
        Json::String(s) => Value::Text(s.clone()),
        Json::Array(items) if items.is_empty() => Value::Text("none".into()),
        Json::Array(items) => match items.iter().map(scalar).collect::<Option<Vec<_>>>() {
            Some(parts) => Value::Text(parts.join(",")),
            None => Value::Error("a nested JSON list, not a value".into()),
        },
        Json::Object(_) => Value::Error("a JSON object, not a value".into()),
    };
    Cell {
        value,
        location: at(path),
    }
}

fn object_member<'a>(
    obj: &'a Map<String, Json>,
    key: &str,
    report: &mut Report,
) -> Option<&'a Map<String, Json>> {
    member(obj, key, "an object", Json::as_object, report)
}

fn array_member<'a>(
    obj: &'a Map<String, Json>,
    key: &str,
    report: &mut Report,
) -> Option<&'a Vec<Json>> {
    member(obj, key, "a list", Json::as_array, report)
}

/// The member `key` as `what` (`as_kind` says whether it is one); each way it is not is reported.
fn member<'a, T: ?Sized>(
    obj: &'a Map<String, Json>,
    key: &str,
    what: &str,
    as_kind: fn(&'a Json) -> Option<&'a T>,
    report: &mut Report,
) -> Option<&'a T> {
    let Some(value) = obj.get(key) else {
        report.push(Diagnostic::error(
            Location::File,
            format!("no `{key}` member"),
        ));
        return None;
    };
    let found = as_kind(value);
    if found.is_none() {
        report.push(Diagnostic::error(
            at(key),
            format!("`{key}` must be {what}"),
        ));
    }
    found
}

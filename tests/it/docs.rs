//! The documentation stays true to the code: docs/plan-format.md names every sheet, column, key
//! and alias of the layout; docs/bundle.md names every check id the host scripts can emit;
//! ARCHITECTURE.md's code map has one row per entry of `src/` and names only modules that exist;
//! the README stays a front page; and nothing in the repository points outside it (dead
//! references to documents that are not here, links in any Markdown file that do not resolve,
//! to a file or to a heading).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use roce_gen::testing::{CLUSTER, KEYS, NICS, SERVERS, SHEETS, dcqcn_files};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The backticked spans of a Markdown text (`` `a` `` and ``` ``a`b`` ```), outside fenced blocks.
fn code_spans(text: &str) -> BTreeSet<String> {
    let mut spans = BTreeSet::new();
    for line in prose_lines(text) {
        let mut rest = line;
        while let Some(start) = rest.find('`') {
            let ticks = rest[start..].chars().take_while(|c| *c == '`').count();
            let fence = "`".repeat(ticks);
            let body = &rest[start + ticks..];
            let Some(end) = body.find(&fence) else { break };
            spans.insert(body[..end].trim().to_string());
            rest = &body[end + ticks..];
        }
    }
    spans
}

/// The lines of a Markdown text outside fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push(line);
        }
    }
    lines
}

/// The first cell of every table row of a Markdown text, as its first code span.
fn first_cells(text: &str) -> Vec<String> {
    prose_lines(text)
        .into_iter()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|row| {
            let cell = row.split(" | ").next()?;
            let start = cell.find('`')? + 1;
            let end = start + cell[start..].find('`')?;
            Some(cell[start..end].to_string())
        })
        .collect()
}

fn missing_from(spans: &BTreeSet<String>, names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|n| !spans.contains(n.as_str()))
        .cloned()
        .collect()
}

#[test]
fn plan_format_names_every_sheet_column_key_and_alias() {
    let doc = read("docs/plan-format.md");
    let spans = code_spans(&doc);
    let mut names = Vec::new();
    for sheet in SHEETS {
        names.push(sheet.name.to_string());
        names.extend(sheet.aliases.iter().map(ToString::to_string));
        for column in sheet.columns {
            names.push(column.name.to_string());
            names.extend(column.aliases.iter().map(ToString::to_string));
        }
    }
    for key in KEYS {
        names.push(key.name.to_string());
        names.extend(key.aliases.iter().map(ToString::to_string));
    }
    let missing = missing_from(&spans, &names);
    assert!(
        missing.is_empty(),
        "docs/plan-format.md does not name (in backticks): {missing:?}"
    );

    // Each key has a row of its own (the DCQCN ones in their table), and every row of a key
    // table names a key that exists.
    let rows = first_cells(&doc);
    let no_row: Vec<&str> = KEYS
        .iter()
        .map(|k| k.name)
        .filter(|k| !rows.iter().any(|r| r == k))
        .collect();
    assert!(no_row.is_empty(), "keys without a table row: {no_row:?}");
    let mut in_key_table = false;
    let mut unknown = Vec::new();
    for line in prose_lines(&doc) {
        if line.starts_with("| key |") {
            in_key_table = true;
        } else if !line.starts_with('|') {
            in_key_table = false;
        } else if in_key_table && !line.starts_with("| ---") {
            let cell = first_cells(line).pop().unwrap_or_default();
            if cell != "dcqcn_<name>" && !KEYS.iter().any(|k| k.name == cell) {
                unknown.push(cell);
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "docs/plan-format.md documents keys the plan does not have: {unknown:?}"
    );
    // Each sheet has its section, whose column table names only that sheet's columns.
    for sheet in [&CLUSTER, &SERVERS, &NICS] {
        let heading = format!("## Sheet `{}`", sheet.name);
        let section = doc
            .split(heading.as_str())
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .unwrap_or_else(|| panic!("docs/plan-format.md has no section {heading}"));
        let mut in_columns = false;
        for line in prose_lines(section) {
            if line.starts_with("| column |") {
                in_columns = true;
            } else if !line.starts_with('|') {
                in_columns = false;
            } else if in_columns && !line.starts_with("| ---") {
                let cell = first_cells(line).pop().unwrap_or_default();
                assert!(
                    sheet.columns.iter().any(|c| c.name == cell),
                    "{heading} documents a column it does not have: {cell}"
                );
            }
        }
    }
    // Each DCQCN parameter with the file it is written to.
    for file in dcqcn_files() {
        assert!(
            spans.contains(&file),
            "docs/plan-format.md does not name {file}"
        );
    }
}

/// Every check id the host scripts can write into a result, read from the scripts themselves:
/// they are the only writers of checks, and every check goes through `rg_check` (directly, or
/// through `rg_check_change`, `rg_check_action` or `rg_abort`). The first argument of each call
/// is a literal id, or a variable filled from a literal list nearby (`for id in …`, the setting
/// lists `RG_SETTINGS` and `RG_RESTORE_ORDER`), or one of the families `fw_<NAME>` (the
/// firmware parameters of `RG_FW_PARAMS`, per port) and `dcqcn_<name>`. A call of any other form
/// fails this test, so a new kind of id cannot slip past it.
fn emitted_check_ids() -> (BTreeSet<String>, Vec<String>) {
    let mut ids = BTreeSet::new();
    let mut fw_params = Vec::new();
    let is_id = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    let folder = root().join("templates/host");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(&folder)
        .expect("templates/host")
        .map(|e| e.expect("templates/host entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect();
    scripts.sort();
    assert!(
        scripts.len() >= 5,
        "too few scripts in {}",
        folder.display()
    );
    for script in scripts {
        let text = std::fs::read_to_string(&script).expect("script");
        let name = script.file_name().unwrap_or_default().to_string_lossy();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            for list in ["RG_SETTINGS=", "RG_RESTORE_ORDER="] {
                if let Some(words) = line.strip_prefix(list) {
                    ids.extend(words.trim_matches('"').split_whitespace().map(String::from));
                }
            }
            if let Some(words) = line.strip_prefix("RG_FW_PARAMS=") {
                fw_params.extend(words.trim_matches('"').split_whitespace().map(String::from));
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["for", "id" | "want", "in", list @ ..] = words.as_slice() {
                ids.extend(
                    list.iter()
                        .map(|w| w.trim_end_matches(';'))
                        .take_while(|w| *w != "do")
                        .filter(|w| is_id(w))
                        .map(String::from),
                );
            }
            for pair in words.windows(2) {
                if !["rg_check", "rg_check_change", "rg_check_action", "rg_abort"]
                    .contains(&pair[0])
                {
                    continue;
                }
                let arg = pair[1].trim_matches('"');
                match arg {
                    a if is_id(a) => {
                        ids.insert(a.to_string());
                    }
                    // Filled from the lists above, or passed on by the wrappers.
                    "$id" | "$want" | "$1" => {}
                    "fw_$name" => {
                        ids.insert("fw_<NAME>".into());
                    }
                    other => panic!(
                        "{name}:{}: a check id of a form this test does not know: {other}",
                        n + 1
                    ),
                }
            }
        }
    }
    ids.insert("dcqcn_<name>".into());
    assert!(
        !fw_params.is_empty(),
        "RG_FW_PARAMS not found in templates/host"
    );
    (ids, fw_params)
}

#[test]
fn bundle_doc_names_every_check_id_the_scripts_emit() {
    let (ids, fw_params) = emitted_check_ids();
    // A sanity floor: the reader above must still find the ids where they are written.
    for id in [
        "hostname",
        "ib_dev",
        "trust",
        "pfc",
        "mtu",
        "nccl_env",
        "fw_<NAME>",
    ] {
        assert!(ids.contains(id), "the scan of templates/host missed {id}");
    }
    let doc = read("docs/bundle.md");
    let spans = code_spans(&doc);
    let mut names: Vec<String> = ids.into_iter().collect();
    names.extend(fw_params.iter().map(|p| format!("fw_{p}_P1")));
    let missing = missing_from(&spans, &names);
    assert!(
        missing.is_empty(),
        "docs/bundle.md does not name these check ids (in backticks): {missing:?}"
    );
}

/// The code spans of the first cell of every table row of a Markdown text (a row may name
/// several modules: `` `a.rs`, `b.rs` ``).
fn first_cell_spans(text: &str) -> Vec<Vec<String>> {
    prose_lines(text)
        .into_iter()
        .filter_map(|l| l.strip_prefix("| "))
        .filter(|row| !row.starts_with("---"))
        .filter_map(|row| {
            let cell = row.split(" | ").next()?;
            let spans: Vec<String> = code_spans(cell).into_iter().collect();
            (!spans.is_empty()).then_some(spans)
        })
        .collect()
}

#[test]
fn code_map_has_one_row_per_entry_of_src() {
    let doc = read("ARCHITECTURE.md");
    let section = doc
        .split("## Code map")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("ARCHITECTURE.md has a `## Code map` section");
    // One short line per module: a row that needs more says too much for a map (the module's
    // own doc comment says it) or groups modules that each deserve their row.
    let long: Vec<&str> = prose_lines(section)
        .into_iter()
        .filter(|l| l.starts_with("| ") && l.chars().count() > 120)
        .collect();
    assert!(
        long.is_empty(),
        "code map rows longer than 120 characters: {long:#?}"
    );
    let mut src_rows: BTreeMap<String, usize> = BTreeMap::new();
    let mut others = Vec::new();
    for cell in first_cell_spans(section).into_iter().flatten() {
        // A row naming a path under another top-level folder (`templates/host/`, `docs/`) is
        // about that folder; every other row names a module of src/, by its path there.
        let top = cell.split('/').next().unwrap_or_default();
        if cell.contains('/') && top != "src" && root().join(top).is_dir() {
            others.push(cell);
        } else {
            *src_rows.entry(cell).or_default() += 1;
        }
    }
    let twice: Vec<&String> = src_rows
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(c, _)| c)
        .collect();
    assert!(twice.is_empty(), "code map rows given twice: {twice:?}");
    let entries: BTreeSet<String> = std::fs::read_dir(root().join("src"))
        .expect("src")
        .map(|e| e.expect("src entry"))
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let kind = e.file_type().ok()?;
            if kind.is_dir() {
                Some(format!("{name}/"))
            } else {
                name.ends_with(".rs").then_some(name)
            }
        })
        .collect();
    let no_row: Vec<&String> = entries
        .iter()
        .filter(|e| !src_rows.contains_key(*e))
        .collect();
    assert!(
        no_row.is_empty(),
        "src/ entries without a code map row: {no_row:?}"
    );
    // A nested module's row (`cmd/console.rs`) must name a file or folder that is there.
    let no_entry: Vec<&String> = src_rows
        .keys()
        .filter(|row| !root().join("src").join(row).exists())
        .collect();
    assert!(
        no_entry.is_empty(),
        "code map rows naming no module of src/: {no_entry:?}"
    );
    assert!(
        src_rows.contains_key("cmd/console.rs") && src_rows.len() > entries.len(),
        "the code map names no nested module: is the row reader broken?"
    );
    let gone: Vec<&String> = others.iter().filter(|p| !root().join(p).exists()).collect();
    assert!(
        gone.is_empty(),
        "code map rows naming paths that do not exist: {gone:?}"
    );
    assert!(
        others.iter().any(|p| p == "docs/"),
        "the code map has no `docs/` row"
    );
}

/// The repository's files as git lists them: tracked ones, and new ones it does not ignore.
fn tracked_files() -> Vec<String> {
    let out = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root())
        .output()
        .expect("git ls-files runs (the tests run in a git checkout)");
    assert!(out.status.success(), "git ls-files failed");
    out.stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

#[test]
fn nothing_refers_to_documents_outside_the_repository() {
    // Spelt in pieces so that this file does not mention them itself.
    let outside = [["..", "/shared"].concat(), ["/wo", "rk/"].concat()];
    let documents = ["plan-format", "bundle", "cli"].map(|n| format!("{n}.md"));
    let mut problems = Vec::new();
    let files = tracked_files();
    assert!(
        files.iter().any(|f| f == "README.md"),
        "git ls-files lists no README.md"
    );
    for file in &files {
        let Ok(text) = std::fs::read_to_string(root().join(file)) else {
            continue; // binary, or deleted in the working tree
        };
        for needle in &outside {
            if text.contains(needle.as_str()) {
                problems.push(format!("{file}: mentions {needle}"));
            }
        }
        for doc in &documents {
            for (at, _) in text.match_indices(doc.as_str()) {
                let before = &text[..at];
                let token_start = before
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || "._/-".contains(c)))
                    .map_or(0, |i| {
                        i + before[i..].chars().next().map_or(1, char::len_utf8)
                    });
                let prefix = &before[token_start..];
                if prefix
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    continue; // another name that ends the same way (`roce-cli.md`)
                }
                let in_docs = file.starts_with("docs/") && prefix.is_empty();
                let as_docs_path = prefix.ends_with("docs/");
                let exists = root().join("docs").join(doc).is_file();
                if !((in_docs || as_docs_path) && exists) {
                    problems.push(format!("{file}: refers to {prefix}{doc}"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// GitHub's anchor of a heading: lowercase, punctuation dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings; a repeated heading gets `-1`, `-2`, … as on
/// GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut all = BTreeSet::new();
    for line in prose_lines(text).into_iter().filter(|l| l.starts_with('#')) {
        let base = anchor(line.trim_start_matches('#'));
        let n = seen.entry(base.clone()).or_default();
        all.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    all
}

/// The targets of the inline links of a Markdown line (`[text](target)`), outside code spans.
fn link_targets(line: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut in_code = false;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => in_code = !in_code,
            b']' if !in_code && bytes.get(i + 1) == Some(&b'(') => {
                let rest = &line[i + 2..];
                if let Some(end) = rest.find(')') {
                    targets.push(&rest[..end]);
                    i += end + 2;
                }
            }
            _ => {}
        }
        i += 1;
    }
    targets
}

#[test]
fn every_relative_markdown_link_resolves() {
    let mut pages: Vec<String> = tracked_files()
        .into_iter()
        .filter(|f| f.ends_with(".md"))
        .filter(|f| root().join(f).is_file())
        .collect();
    pages.sort();
    for page in [
        "README.md",
        "docs/bundle.md",
        "docs/host.md",
        "CONTRIBUTING.md",
    ] {
        assert!(
            pages.iter().any(|p| p == page),
            "{page} is not among the Markdown files {pages:?}"
        );
    }
    let top = root().canonicalize().expect("repository root");
    let mut broken = Vec::new();
    let mut checked = 0;
    let mut fragments = 0;
    for page in &pages {
        let text = read(page);
        let dir = Path::new(page).parent().unwrap_or(Path::new(""));
        for line in prose_lines(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    broken.push(format!("{page}: {target} points outside the repository"));
                    continue;
                }
                checked += 1;
                let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
                let file = if path.is_empty() {
                    root().join(page)
                } else {
                    root().join(dir).join(path)
                };
                let inside = file.canonicalize().is_ok_and(|f| f.starts_with(&top));
                if !inside {
                    broken.push(format!("{page}: {target} is not a file of the repository"));
                    continue;
                }
                if !fragment.is_empty() && file.extension().is_some_and(|e| e == "md") {
                    fragments += 1;
                    let linked = std::fs::read_to_string(&file).unwrap_or_default();
                    if !anchors(&linked).contains(fragment) {
                        broken.push(format!("{page}: {target} names no heading"));
                    }
                }
            }
        }
    }
    assert!(
        checked >= 30 && fragments >= 10,
        "only {checked} links ({fragments} to a heading) found: is the link reader broken?"
    );
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn link_reader_finds_links_and_anchors_as_github_makes_them() {
    assert_eq!(
        link_targets("see [a](x.md#b) and `[c](not-a-link)` then [d](../y.md)"),
        ["x.md#b", "../y.md"]
    );
    let heading_anchors =
        anchors("# Top\n## `run-here.sh`\n## Notes\n```\n# not a heading\n```\n## Notes\n");
    let want: BTreeSet<String> = ["top", "run-heresh", "notes", "notes-1"]
        .map(String::from)
        .into();
    assert_eq!(heading_anchors, want);
}

/// The README is a front page: short, with the user's whole loop on its first screen.
#[test]
fn readme_is_a_front_page_with_the_loop_on_its_first_screen() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; the manual goes to docs/"
    );
    let first_screen: String = readme.lines().take(60).collect::<Vec<_>>().join("\n");
    for step in [
        "roce-gen sample",
        "roce-gen validate",
        "roce-gen generate",
        "run-here.sh precheck",
        "run-here.sh apply",
        "roce-gen ingest",
        "cargo test",
        "bash .ci/run",
    ] {
        assert!(
            first_screen.contains(step),
            "the README's first 60 lines do not show `{step}`"
        );
    }
}

#[test]
fn every_schema_the_code_writes_is_in_the_changelog() {
    let changelog = read("CHANGELOG.md");
    let mut tags = std::collections::BTreeSet::new();
    let mut stack = vec![root().join("src"), root().join("templates")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            // `"roce-gen/<kind>/v<N>"`, outside tests (a test names a version no one writes).
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for (i, _) in code.match_indices("\"roce-gen/") {
                let tag: String = code[i + 1..].chars().take_while(|c| *c != '"').collect();
                // A whole tag; `roce-gen/` alone is the family a reader recognises.
                if tag
                    .rsplit_once("/v")
                    .is_some_and(|(_, n)| n.parse::<u32>().is_ok())
                {
                    tags.insert(tag);
                }
            }
        }
    }
    assert!(tags.len() >= 8, "{tags:?}");
    for tag in tags {
        assert!(
            changelog.contains(&format!("`{tag}`")),
            "CHANGELOG.md does not record the schema {tag}"
        );
    }
}

/// The modules of `src/` each code file names (`crate::a::b…`, outside comments and test
/// modules), as module paths: `src/ingest/render/mod.rs` is `ingest::render`.
fn module_imports() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let src = root().join("src");
    let mut imports: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for entry in walkdir::WalkDir::new(&src).sort_by_file_name() {
        let entry = entry.unwrap();
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(&src).unwrap().with_extension("");
        let mut module: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into()).collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let text = std::fs::read_to_string(path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (at, _) in line.match_indices("crate::") {
                let named: Vec<String> = line[at + 7..]
                    .split("::")
                    .map_while(|part| {
                        let word: String = part
                            .chars()
                            .take_while(|c| {
                                c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit()
                            })
                            .collect();
                        (!word.is_empty()).then_some(word)
                    })
                    .collect();
                imports.entry(module.clone()).or_default().insert(named);
            }
        }
    }
    imports
}

/// The import circles among the children of each folder of `src/` (a child names another
/// through any of its files), each as the modules around it.
fn import_circles(imports: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    let folders: BTreeSet<Vec<String>> = imports
        .keys()
        .flat_map(|m| (0..m.len()).map(|k| m[..k].to_vec()))
        .collect();
    let mut circles = Vec::new();
    for folder in folders {
        let child = |m: &Vec<String>| {
            (m.len() > folder.len() && m[..folder.len()] == folder[..])
                .then(|| m[folder.len()].clone())
        };
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, named) in imports {
            let Some(a) = child(from) else { continue };
            for b in named.iter().filter_map(child).filter(|b| *b != a) {
                edges.entry(a.clone()).or_default().insert(b);
            }
        }
        // Depth-first search; a module met again on the current path closes a circle.
        fn visit(
            at: &str,
            edges: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
            found: &mut Vec<String>,
        ) {
            if let Some(i) = path.iter().position(|p| p == at) {
                found.push(format!("{} -> {at}", path[i..].join(" -> ")));
                return;
            }
            if !done.insert(at.to_string()) {
                return;
            }
            path.push(at.to_string());
            for next in edges.get(at).into_iter().flatten() {
                visit(next, edges, path, done, found);
            }
            path.pop();
        }
        let mut done = BTreeSet::new();
        let mut found = Vec::new();
        for start in edges.keys() {
            visit(start, &edges, &mut Vec::new(), &mut done, &mut found);
        }
        let at = if folder.is_empty() {
            "src".to_string()
        } else {
            folder.join("::")
        };
        circles.extend(found.into_iter().map(|c| format!("in {at}: {c}")));
    }
    circles
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let imports = module_imports();
    assert!(imports.len() > 40, "{} modules read", imports.len());
    assert_eq!(import_circles(&imports), Vec::<String>::new());
    // The reader sees a circle where there is one.
    let mut circular = imports.clone();
    circular
        .entry(vec!["plan".into(), "model".into()])
        .or_default()
        .insert(vec!["plan".into(), "validate".into()]);
    let found = import_circles(&circular);
    assert!(
        found.contains(&"in plan: model -> validate -> model".to_string()),
        "{found:?}"
    );
}

/// docs/try-it.md's commands work as written: its two shell blocks, run in a temporary folder
/// (for /tmp/try) with this build (for `cargo run --release --`), end with node-a configured;
/// and the precheck they print is the one the README and docs/host.md show.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_try_it_page_runs_as_written() {
    let doc = read("docs/try-it.md");
    let mut script = String::from("set -e\n");
    for block in doc.split("```sh\n").skip(1) {
        let block = block.split("```").next().unwrap();
        script.push_str(block);
    }
    let dir = tempfile::tempdir().unwrap();
    let script = script
        .replace("/tmp/try", &dir.path().join("try").display().to_string())
        .replace("cargo run --release --", env!("CARGO_BIN_EXE_roce-gen"));
    assert!(
        script.contains("precheck.sh") && script.contains("ingest"),
        "{script}"
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // ingest exits 1: node-b has no result.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("apply will change:"), "{stdout}");
    assert!(
        stdout.contains("✅ node-a (192.168.1.10): configured"),
        "{stdout}"
    );

    // The precheck the README and docs/host.md show is this one, as printed: docs/host.md's
    // whole, the README's line by line (a line cut short with ` …` as a prefix; its `next:` is
    // run-here.sh's own).
    let bundle = dir.path().join("try/node-a").display().to_string();
    let host_doc = read("docs/host.md");
    let shown = host_doc
        .split("```\n")
        .find(|b| b.starts_with("✅ node-a: precheck"))
        .expect("docs/host.md shows a precheck")
        .replace("/opt/bundles/node-a", &bundle);
    assert!(
        stdout.contains(&shown),
        "docs/host.md shows\n{shown}\nprecheck printed\n{stdout}"
    );
    let readme = read("README.md");
    let shown = readme
        .split("```\n")
        .find(|b| b.starts_with("$ bash /media/usb/roce/run-here.sh precheck"))
        .expect("the README shows a precheck");
    let mut printed = stdout
        .lines()
        .skip_while(|l| !l.starts_with("✅ node-a: precheck"));
    for line in shown
        .lines()
        .filter(|l| !l.starts_with("$ ") && !l.starts_with("next: "))
    {
        let cut = line.strip_suffix(" …");
        assert!(
            printed.any(|p| cut.map_or(p == line, |c| p.starts_with(c))),
            "the README shows {line:?}, which precheck did not print (in this order):\n{stdout}"
        );
    }
}

/// Every file of a generated bundle (golden/lab-2node's node-a, as its manifest lists them, and
/// the manifest and sums beside them) is named in docs/bundle.md's table of a bundle.
#[test]
fn every_file_of_a_bundle_is_in_the_bundle_doc() {
    let doc = read("docs/bundle.md");
    let spans = code_spans(&doc);
    let manifest: serde_json::Value =
        serde_json::from_str(&read("golden/lab-2node/bundles/node-a/manifest.json")).unwrap();
    let mut files: Vec<String> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert!(files.len() > 20, "{files:?}");
    files.extend(["manifest.json".to_string(), "SHA256SUMS".to_string()]);
    let missing = missing_from(&spans, &files);
    assert!(
        missing.is_empty(),
        "docs/bundle.md does not name these files of a bundle: {missing:?}"
    );
}

/// Every phase `run-here.sh` takes (its `case $phase in` line) and every option of its own (its
/// usage line) is named in docs/delivery.md's section on it, as code.
#[test]
fn every_phase_and_option_of_run_here_is_in_the_delivery_doc() {
    let script = read("golden/lab-2node/run-here.sh");
    let phases_line = script
        .lines()
        .skip_while(|l| l.trim() != "case $phase in")
        .nth(1)
        .expect("run-here.sh has a `case $phase in`");
    let phases: Vec<String> = phases_line
        .trim()
        .trim_end_matches(") ;;")
        .split(" | ")
        .map(str::to_string)
        .collect();
    assert!(phases.len() >= 4, "{phases_line}");
    let usage = script
        .lines()
        .find_map(|l| l.strip_prefix("RG_USAGE='usage: bash run-here.sh "))
        .expect("run-here.sh has a usage line");
    let options: Vec<String> = usage
        .split(['[', ']', '|', ' '])
        .filter(|w| w.starts_with('-'))
        .map(str::to_string)
        .collect();
    assert!(options.len() >= 6, "{usage}");
    let doc = read("docs/delivery.md");
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("run-here.sh\n"))
        .expect("docs/delivery.md has a section on run-here.sh");
    let spans = code_spans(section);
    let named = |w: &String| {
        spans
            .iter()
            .any(|s| s == w || s.starts_with(&format!("{w} ")) || s.split('/').any(|p| p == w))
    };
    let missing: Vec<&String> = phases
        .iter()
        .chain(&options)
        .filter(|w| !named(w))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/delivery.md's run-here.sh section does not name {missing:?}"
    );
}

/// The manual pages' EXIT STATUS and the README's Commands table say the same: each subcommand's
/// row ends with its page's words; and every page has EXIT STATUS and EXAMPLES.
#[test]
fn man_pages_and_the_readme_give_the_same_exit_status() {
    let readme = read("README.md");
    for (command, exit) in roce_gen::testing::man_exit_statuses() {
        if command.is_empty() {
            continue;
        }
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `roce-gen {command}")))
            .unwrap_or_else(|| panic!("no README row for {command}"));
        assert!(
            row.trim_end().ends_with(&format!("| {exit} |")),
            "{command}: the page says {exit:?}, the README {row:?}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let run = crate::common::roce_gen(dir.path(), &["man", "--dir", "man"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    for entry in std::fs::read_dir(dir.path().join("man")).unwrap() {
        let path = entry.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        for section in [".SH \"EXIT STATUS\"", ".SH EXAMPLES"] {
            assert!(
                page.contains(section),
                "{} has no {section}",
                path.display()
            );
        }
    }
}

//! Putting values into generated files safely. Every value a template prints into a shell script
//! is quoted for bash, and every value printed into a systemd unit is escaped for systemd, by
//! default: a template needs the explicit, greppable `|safe` to print anything raw. Values were
//! already validated by the plan reader; this is the second, independent wall.

use std::borrow::Cow;

use minijinja::value::{Value, ValueKind};
use minijinja::{AutoEscape, Error, ErrorKind, Output, State};

/// The auto-escape mode of a template, from its file name (`apply.sh.j2` → shell).
pub(crate) fn mode_for(name: &str) -> AutoEscape {
    let name = name.trim_end_matches(".j2");
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("sh") => AutoEscape::Custom("sh".into()),
        Some("service" | "timer") => AutoEscape::Custom("systemd".into()),
        // A JSON string is a valid YAML scalar, so YAML files get JSON quoting.
        Some("json" | "yml" | "yaml") => AutoEscape::Custom("json".into()),
        _ => AutoEscape::None,
    }
}

/// Quotes `s` as one bash word. A NUL cannot be in a shell word and is an error.
pub(crate) fn sh_quote(s: &str) -> Result<Cow<'_, str>, String> {
    if s.is_empty() {
        return Ok(Cow::Borrowed("''"));
    }
    shlex::try_quote(s)
        .map_err(|_| format!("{s:?} cannot be quoted for the shell (it holds a NUL)"))
}

/// Escapes `s` for a systemd unit line: `%` and `$` are doubled so that systemd expands neither a
/// specifier nor a variable. Whitespace, quotes, backslashes and control characters would change
/// how systemd splits a command line; values that reach a unit are names and paths, so those are
/// refused rather than quoted.
pub(crate) fn systemd_escape(s: &str) -> Result<String, String> {
    if let Some(c) = s
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || "\"'\\;".contains(*c))
    {
        return Err(format!(
            "{s:?} cannot be put in a systemd unit (it holds {c:?})"
        ));
    }
    Ok(s.replace('%', "%%").replace('$', "$$"))
}

/// The formatter for `Environment::set_formatter`: shell and systemd quoting for the custom
/// modes, the default behaviour otherwise. Undefined and `none` values are errors in the custom
/// modes, so that a missing value can never print as an empty string into a script.
pub(crate) fn formatter(
    out: &mut Output<'_>,
    state: &mut State<'_, '_>,
    value: &Value,
) -> Result<(), Error> {
    // Borrowed, not copied: this runs for every value of every host's files.
    let auto_escape = state.auto_escape();
    let mode: &str = match &auto_escape {
        AutoEscape::Custom(name) => name,
        _ => return minijinja::escape_formatter(out, state, value),
    };
    if value.is_safe() {
        return out
            .write_str(value.as_str().unwrap_or_default())
            .map_err(Error::from);
    }
    let text = match value.kind() {
        ValueKind::Number | ValueKind::Bool => return write!(out, "{value}").map_err(Error::from),
        ValueKind::String => value.as_str().unwrap_or_default(),
        kind => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "a {kind} value cannot be printed into a {mode} file; print its items or fields"
                ),
            ));
        }
    };
    let escaped = match mode {
        "sh" => sh_quote(text),
        "systemd" => systemd_escape(text).map(Cow::Owned),
        "json" => serde_json::to_string(text)
            .map(Cow::Owned)
            .map_err(|e| e.to_string()),
        other => Err(format!("unknown escape mode {other}")),
    };
    let escaped = escaped.map_err(|why| Error::new(ErrorKind::InvalidOperation, why))?;
    out.write_str(&escaped).map_err(Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings that must come out of bash exactly as they went in.
    pub(crate) const HOSTILE: &[&str] = &[
        "",
        "plain",
        "it's",
        "\"double\"",
        "$(reboot)",
        "`reboot`",
        "${HOME}",
        "$HOME",
        "a\nb",
        "{a,b}",
        "\u{a0}nbsp",
        "100%",
        "-rf",
        "--",
        "*",
        "~root",
        "a b\tc",
        "back\\slash",
        "semi;colon",
        "pipe|amp&",
        "'\"'\"'",
        "!history",
        "# comment",
        "主机",
    ];

    #[test]
    fn shell_quoting_round_trips_through_bash() {
        for s in HOSTILE {
            let quoted = sh_quote(s).unwrap();
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(format!("printf %s {quoted}"))
                .output()
                .expect("bash runs");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                *s,
                "{s:?} quoted as {quoted}"
            );
        }
    }

    #[test]
    fn shell_quoting_refuses_nul() {
        assert!(sh_quote("a\0b").is_err());
    }

    #[test]
    fn systemd_escaping_doubles_specifiers_and_refuses_splitting() {
        assert_eq!(systemd_escape("100%").unwrap(), "100%%");
        assert_eq!(systemd_escape("$HOME").unwrap(), "$$HOME");
        assert_eq!(
            systemd_escape("/opt/roce-gen/demo/apply.sh").unwrap(),
            "/opt/roce-gen/demo/apply.sh"
        );
        for bad in ["a b", "a\nb", "a;b", "a\"b", "a'b", "a\\b", "a\tb"] {
            assert!(systemd_escape(bad).is_err(), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod render_tests {
    use minijinja::Environment;

    use super::tests::HOSTILE;

    fn env() -> Environment<'static> {
        let mut env = Environment::new();
        env.set_auto_escape_callback(super::mode_for);
        env.set_formatter(super::formatter);
        env.add_template("t.sh.j2", "X={{ v }}\nprintf %s \"$X\"")
            .unwrap();
        env.add_template("raw.sh.j2", "X={{ v|safe }}").unwrap();
        env.add_template("t.service.j2", "ExecStart=/bin/true {{ v }}")
            .unwrap();
        env
    }

    #[test]
    fn hostile_values_render_into_bash_as_plain_data() {
        let env = env();
        let tmpl = env.get_template("t.sh.j2").unwrap();
        for s in HOSTILE {
            let script = tmpl.render(minijinja::context! { v => *s }).unwrap();
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(&script)
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                *s,
                "script:\n{script}"
            );
            assert!(out.status.success(), "{script}");
        }
    }

    #[test]
    fn numbers_render_bare_and_lists_or_undefined_values_are_errors() {
        let env = env();
        let tmpl = env.get_template("t.sh.j2").unwrap();
        assert!(
            tmpl.render(minijinja::context! { v => 4200 })
                .unwrap()
                .starts_with("X=4200\n")
        );
        assert!(
            tmpl.render(minijinja::context! { v => vec!["a", "b"] })
                .is_err()
        );
        assert!(tmpl.render(minijinja::context! { v => () }).is_err());
        let raw = env.get_template("raw.sh.j2").unwrap();
        assert_eq!(
            raw.render(minijinja::context! { v => "$(x)" }).unwrap(),
            "X=$(x)"
        );
    }

    #[test]
    fn unit_values_are_escaped_or_refused() {
        let env = env();
        let tmpl = env.get_template("t.service.j2").unwrap();
        assert_eq!(
            tmpl.render(minijinja::context! { v => "50%$x" }).unwrap(),
            "ExecStart=/bin/true 50%%$$x"
        );
        assert!(tmpl.render(minijinja::context! { v => "a b" }).is_err());
        assert!(
            tmpl.render(minijinja::context! { v => "a\nExecStartPre=/bin/evil" })
                .is_err()
        );
    }
}

//! GitHub Actions workflow commands (`-o github`): one `::error` or `::warning` per object that
//! drifted or could not be checked, which GitHub shows as an annotation on the file and line of
//! a pull request (`file=`, `line=`: a manifests object's document; a kustomization's objects
//! point at the kustomization file). A release's objects, and extra objects, have no file: their
//! annotations are on the run. Nothing is written for a clean run.
//!
//! Escaping follows GitHub's rules for workflow commands: in the message `%`, `\r` and `\n`
//! become `%25`, `%0D` and `%0A`; in a property value `:` and `,` also become `%3A` and `%2C`.
//! So a value holding a newline or `::` cannot start a command of its own.

use std::io::Write;

use crate::render::ci::{self, Finding, Level, Place, Places};
use crate::report::fleet::Fleet;
use crate::report::upgrade::{UpgradeClass, UpgradeReport};
use crate::report::{DriftReport, ManifestsReport, ObjectReport, Problem, TargetReport};

/// A command's message (its data), escaped.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A property value (`file=`, `title=`), escaped.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn command<W: Write>(
    out: &mut W,
    level: Level,
    place: Option<&Place>,
    title: &str,
    message: &str,
) -> std::io::Result<()> {
    let name = match level {
        Level::Error => "error",
        Level::Warning => "warning",
    };
    let mut props = Vec::new();
    if let Some(p) = place {
        props.push(format!("file={}", escape_property(&p.file)));
        if let Some(line) = p.line {
            props.push(format!("line={line}"));
        }
    }
    props.push(format!("title={}", escape_property(title)));
    writeln!(out, "::{name} {}::{}", props.join(","), escape_data(message))
}

fn target<W: Write, O>(
    out: &mut W,
    name: &str,
    report: &TargetReport<O>,
    place: impl Fn(Option<&ObjectReport>) -> Option<Place>,
) -> std::io::Result<()> {
    for o in &report.objects {
        let Some(finding) = Finding::of(o) else { continue };
        let title = format!("drift: {} {} ({name})", o.title(), finding.words());
        let mut message = ci::message(o, finding);
        for line in ci::details(o) {
            message.push('\n');
            message.push_str(&line);
        }
        command(out, finding.level(), place(Some(o)).as_ref(), &title, &message)?;
    }
    if let Some(Problem::Failed(messages)) = &report.problem {
        let title = format!("drift: {name} could not be checked");
        command(out, Level::Error, place(None).as_ref(), &title, &messages.join("\n"))?;
    }
    Ok(())
}

fn write<W: Write, T>(
    out: &mut W,
    fleet: &Fleet<T>,
    mut one: impl FnMut(&mut W, &T, Option<&str>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    for c in &fleet.clusters {
        match &c.report {
            Some(r) => one(out, r, fleet.many().then_some(c.cluster.as_str()))?,
            None => {
                let title = format!("drift: cluster {} could not be read", c.cluster);
                command(out, Level::Error, None, &title, c.error.as_deref().unwrap_or("no report"))?
            }
        }
    }
    Ok(())
}

/// `release -o github`: annotations on the run (a release has no file).
pub fn releases<W: Write>(out: &mut W, fleet: &Fleet<DriftReport>) -> std::io::Result<()> {
    write(out, fleet, |out, report, cluster| {
        for r in &report.releases {
            target(out, &ci::in_cluster(cluster, &ci::release_name(&r.origin)), r, |_| None)?;
        }
        Ok(())
    })
}

/// `manifests -o github`: annotations on each object's file and line.
pub fn manifests<W: Write>(out: &mut W, fleet: &Fleet<ManifestsReport>, places: &Places) -> std::io::Result<()> {
    write(out, fleet, |out, report, cluster| {
        for f in &report.files {
            target(out, &ci::in_cluster(cluster, &ci::file_name(&f.origin)), f, |o| Some(places.of(&f.origin, o)))?;
        }
        if let Some(e) = &report.extra {
            target(out, &ci::in_cluster(cluster, &ci::extra_name(&e.origin)), e, |_| None)?;
        }
        Ok(())
    })
}

/// `upgrade -o github`: an `::error` per change that blocks the upgrade and a `::warning` per
/// other change of a class in `failing` (what `--fail-on` counts), on the run.
pub fn upgrade<W: Write>(out: &mut W, report: &UpgradeReport, failing: &[UpgradeClass]) -> std::io::Result<()> {
    for c in report.changes.iter().filter(|c| failing.contains(&c.class)) {
        let level = if c.class == UpgradeClass::Blocking { Level::Error } else { Level::Warning };
        let title = format!(
            "upgrade {}/{}: {} {}",
            report.namespace,
            report.release,
            crate::render::upgrade::what(c),
            c.class.title()
        );
        command(out, level, None, &title, &crate::render::upgrade::message(c))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::render::ci::fixture;

    /// A workflow command read back as the runner reads it: `::name props::message`, the
    /// properties split on `,` then on the first `=`, each value and the message unescaped.
    #[derive(Debug, PartialEq)]
    struct Command {
        name: String,
        props: Vec<(String, String)>,
        message: String,
    }

    fn unescape(s: &str) -> String {
        s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")
    }

    fn parse(line: &str) -> Command {
        let rest = line.strip_prefix("::").unwrap_or_else(|| panic!("not a command: {line:?}"));
        let (head, message) = rest.split_once("::").unwrap();
        let (name, props) = head.split_once(' ').unwrap_or((head, ""));
        let props = props
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap();
                (k.to_string(), unescape(v))
            })
            .collect();
        Command { name: name.to_string(), props, message: unescape(message) }
    }

    fn prop<'a>(c: &'a Command, key: &str) -> Option<&'a str> {
        c.props.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    #[test]
    fn annotations_round_trip_hostile_text() {
        let mut out = Vec::new();
        super::manifests(&mut out, &fixture::manifests(), &fixture::places()).unwrap();
        let text = String::from_utf8(out).unwrap();
        fixture::assert_redacted(&text);
        let commands: Vec<Command> = text.lines().map(parse).collect();
        // One line per finding: a newline in a value never starts a line of its own.
        assert_eq!(commands.len(), 9, "{text}");
        let first = &commands[0];
        assert_eq!(first.name, "error");
        assert_eq!(prop(first, "file"), Some("k8s/we b,1:%.yaml"));
        assert_eq!(prop(first, "line"), Some("2"));
        assert_eq!(
            prop(first, "title"),
            Some(format!("drift: Deployment shop/{} changed (file k8s/we b,1:%.yaml)", fixture::HOSTILE).as_str())
        );
        assert!(first.message.contains(&format!("data.motd: hello -> {}", fixture::HOSTILE_VALUE)), "{first:?}");
        assert_eq!(commands[2].name, "warning");
        assert_eq!(prop(&commands[6], "file"), Some("overlays/prod/kustomization.yaml"));
        assert_eq!(prop(&commands[6], "line"), None);
        assert_eq!((prop(&commands[7], "file"), prop(&commands[7], "line")), (Some("base/worker.yaml"), Some("7")));
        insta::assert_snapshot!("github_manifests", text);
    }

    #[test]
    fn annotations_of_releases_are_on_the_run() {
        let mut out = Vec::new();
        super::releases(&mut out, &fixture::releases_two()).unwrap();
        let text = String::from_utf8(out).unwrap();
        fixture::assert_redacted(&text);
        let commands: Vec<Command> = text.lines().map(parse).collect();
        assert!(commands.iter().all(|c| prop(c, "file").is_none()));
        assert!(prop(&commands[0], "title").unwrap().ends_with("(prod-eu: release shop/shop)"));
        let last = commands.last().unwrap();
        assert_eq!(prop(last, "title"), Some("drift: cluster prod-us could not be read"));
        insta::assert_snapshot!("github_releases_two_clusters", text);
    }

    #[test]
    fn escaping_follows_github() {
        assert_eq!(super::escape_data("a%b\r\nc::d"), "a%25b%0D%0Ac::d");
        assert_eq!(super::escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }
}

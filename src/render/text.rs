//! Text output of drift reports: per release a header, per object its title, per field a line
//! (`~ path: desired → live`, `+ path: live (added by hand)`, `- path: desired (missing live)`),
//! multi-line strings as unified diffs, attribution dimmed at the end, then reconcile commands.

use std::io::{self, Write};

use serde_json::Value;

use super::Theme;
use crate::report::field::Change;
use crate::report::{
    DriftReport, ExtraReport, FieldReport, FileReport, ManifestsReport, ObjectReport, ObjectState, Problem,
    ReleaseOrigin, ReleaseReport, SourceType, Status, TargetReport,
};

/// Longest single-line value shown before it is shortened.
const MAX_INLINE: usize = 160;

/// A value as one line of text: strings bare, everything else as compact JSON.
pub fn inline_value(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.chars().count() > MAX_INLINE {
        let cut: String = s.chars().take(MAX_INLINE).collect();
        format!("{cut}… ({} chars)", s.chars().count())
    } else {
        s
    }
}

fn attribution(f: &FieldReport, theme: &Theme, newer: Option<&str>) -> String {
    if let Some(r) = f.from_revision {
        let what = newer.map(|n| format!("{n} revision")).unwrap_or_else(|| "revision".into());
        return format!("  {}", theme.dim(&format!("(from {what} {r}, not by hand)")));
    }
    match (&f.manager, &f.time) {
        (Some(m), Some(t)) => format!("  {}", theme.dim(&format!("({m}, {t})"))),
        (Some(m), None) => format!("  {}", theme.dim(&format!("({m})"))),
        _ => String::new(),
    }
}

/// Render one field line (and its diff, for multi-line strings).
pub fn field<W: Write>(out: &mut W, f: &FieldReport, theme: &Theme, indent: &str) -> io::Result<()> {
    field_in(out, f, theme, indent, None)
}

/// [`field`], naming the Helm status of the newer revision a field comes from (`failed`), and
/// under it its history when there is one (`release --history`).
fn field_in<W: Write>(
    out: &mut W,
    f: &FieldReport,
    theme: &Theme,
    indent: &str,
    newer: Option<&str>,
) -> io::Result<()> {
    field_line(out, f, theme, indent, newer)?;
    match &f.history {
        Some(h) => writeln!(out, "{indent}    {}", theme.dim(&history_note(h))),
        None => Ok(()),
    }
}

/// `drifted since 3d 4h (2026-12-01T10:02:11Z), 2 episodes, by kubectl-edit`.
pub fn history_note(h: &crate::report::history::FieldHistory) -> String {
    let episodes = if h.episodes == 1 { "1 episode".to_string() } else { format!("{} episodes", h.episodes) };
    let by = if h.managers.is_empty() { String::new() } else { format!(", by {}", h.managers.join(", ")) };
    format!("drifted since {} ({}), {episodes}{by}", crate::report::history::elapsed(h.age), h.since)
}

fn field_line<W: Write>(
    out: &mut W,
    f: &FieldReport,
    theme: &Theme,
    indent: &str,
    newer: Option<&str>,
) -> io::Result<()> {
    let mut attr = attribution(f, theme, newer);
    if let (None, Some(cause)) = (&f.reason, &f.admission) {
        // `--admission-changes=drift`: counted, with what changed it.
        attr.push_str(&format!("  {}", theme.dim(&format!("(changed at admission: {cause})"))));
    }
    if let Some(reason) = &f.reason {
        let d = f.desired.as_ref().map(inline_value).unwrap_or_else(|| "(unset)".into());
        let l = f.live.as_ref().map(inline_value).unwrap_or_else(|| "(unset)".into());
        return writeln!(
            out,
            "{indent}{} {}: {d} → {l}  {}{attr}",
            theme.dim("="),
            f.path,
            theme.dim(&format!("ignored: {reason}"))
        );
    }
    match f.change {
        Change::Changed => {
            if let Some((d, l)) = super::diff::texts(f) {
                writeln!(out, "{indent}{} {}:{attr}", theme.drifted("~"), f.path)?;
                return unified_diff(out, d, l, theme, &format!("{indent}    "));
            }
            let d = f.desired.as_ref().map(inline_value).unwrap_or_default();
            let l = f.live.as_ref().map(inline_value).unwrap_or_default();
            writeln!(out, "{indent}{} {}: {} → {}{attr}", theme.drifted("~"), f.path, theme.desired(&d), theme.live(&l))
        }
        Change::Added => {
            let l = f.live.as_ref().map(inline_value).unwrap_or_default();
            writeln!(
                out,
                "{indent}{} {}: {} {}{attr}",
                theme.live("+"),
                f.path,
                theme.live(&l),
                theme.dim("(added by hand)")
            )
        }
        Change::Removed => {
            let d = f.desired.as_ref().map(inline_value).unwrap_or_default();
            writeln!(
                out,
                "{indent}{} {}: {} {}{attr}",
                theme.desired("-"),
                f.path,
                theme.desired(&d),
                theme.dim("(missing live)")
            )
        }
    }
}

/// A unified diff of two texts, desired as the old side and live as the new side: the lines of
/// [`super::diff::lines`] (the dashboard shows the same), removed lines in the desired colour,
/// added lines in the live colour, headers dimmed.
pub fn unified_diff<W: Write>(out: &mut W, desired: &str, live: &str, theme: &Theme, indent: &str) -> io::Result<()> {
    use super::diff::LineKind;
    for line in super::diff::lines(desired, live) {
        let styled = match line.kind {
            LineKind::Header | LineKind::Hunk => theme.dim(&line.text),
            LineKind::Added => theme.live(&line.text),
            LineKind::Removed => theme.desired(&line.text),
            LineKind::Context | LineKind::NoNewline => line.text,
        };
        writeln!(out, "{indent}{styled}")?;
    }
    Ok(())
}

/// Render one object with its fields.
pub fn object<W: Write>(out: &mut W, o: &ObjectReport, theme: &Theme) -> io::Result<()> {
    object_in(out, o, theme, None)
}

/// [`object`], naming the Helm status of the newer revision a difference comes from.
fn object_in<W: Write>(out: &mut W, o: &ObjectReport, theme: &Theme, newer: Option<&str>) -> io::Result<()> {
    let title = match &o.note {
        Some(note) => format!("{}  {}", theme.object(&o.title()), theme.dim(&format!("({note})"))),
        None => theme.object(&o.title()),
    };
    let by = |r: u32| format!("{} revision {r}", newer.unwrap_or("newer"));
    match (o.state, o.from_revision) {
        (ObjectState::Missing, _) if o.not_created => {
            writeln!(out, "  {title}  {}", theme.dim("NOT CREATED (the install failed)"))
        }
        (ObjectState::Missing, Some(r)) => {
            writeln!(out, "  {title}  {}", theme.desired(&format!("MISSING (deleted by {}, not by hand)", by(r))))
        }
        (ObjectState::Extra, Some(r)) => {
            writeln!(out, "  {title}  {}", theme.drifted(&format!("EXTRA (created by {}, not by hand)", by(r))))
        }
        _ => object_state(out, o, theme, &title, newer),
    }
}

fn object_state<W: Write>(
    out: &mut W,
    o: &ObjectReport,
    theme: &Theme,
    title: &str,
    newer: Option<&str>,
) -> io::Result<()> {
    match o.state {
        ObjectState::Missing => writeln!(out, "  {title}  {}", theme.desired("MISSING (deleted live)")),
        ObjectState::Extra => {
            writeln!(out, "  {title}  {}", theme.drifted("EXTRA (carries the release's labels, not in the manifest)"))
        }
        ObjectState::Error => writeln!(out, "  {title}  {} {}", theme.error("ERROR"), o.error.as_deref().unwrap_or("")),
        ObjectState::Ignored if o.fields.is_empty() => writeln!(out, "  {title}  {}", theme.dim("ignored")),
        ObjectState::Changed | ObjectState::Ignored => {
            writeln!(out, "  {title}")?;
            for f in &o.fields {
                field_in(out, f, theme, "    ", newer)?;
            }
            Ok(())
        }
    }
}

/// The status word of a release.
pub fn status_word(s: Status, theme: &Theme) -> String {
    match s {
        Status::Clean => theme.clean("CLEAN"),
        Status::Drifted => theme.drifted("DRIFTED"),
        Status::Error => theme.error("ERROR"),
        Status::Incomplete => theme.drifted("INCOMPLETE"),
    }
}

/// `  helm failed` (or `  helm failed (revision 2)` when the newest revision is not the one
/// compared as the desired state); empty when the release could not be read.
fn helm_state(r: &ReleaseOrigin) -> String {
    match (&r.helm_status, r.latest_revision) {
        (Some(s), Some(l)) if l != r.revision => format!("  helm {s} (revision {l})"),
        (Some(s), _) => format!("  helm {s}"),
        _ => String::new(),
    }
}

/// The Helm status of a newer revision compared too (`failed`), for "from failed revision N".
fn newer_status(r: &ReleaseOrigin) -> Option<&str> {
    r.latest_revision.filter(|l| *l != r.revision).and(r.helm_status.as_deref())
}

/// A target's problem: `  error: MESSAGE`.
fn problem<W: Write, O>(out: &mut W, t: &TargetReport<O>, theme: &Theme) -> io::Result<()> {
    if let Some(e) = &t.problem {
        writeln!(out, "  {} {e}", theme.error("error:"))?;
    }
    Ok(())
}

/// A target's reconcile commands, under their heading.
fn reconcile<W: Write, O>(out: &mut W, t: &TargetReport<O>, theme: &Theme) -> io::Result<()> {
    if !t.reconcile.is_empty() {
        writeln!(out, "  {}", theme.heading("Reconcile (review, then run in order):"))?;
        for c in &t.reconcile {
            writeln!(out, "    {}", theme.command(c))?;
        }
    }
    Ok(())
}

/// The GitOps object behind a target: which, its own conditions, and what it does next.
fn gitops<W: Write>(out: &mut W, g: &crate::report::gitops::GitOps, theme: &Theme) -> io::Result<()> {
    let mode = g.drift_detection.as_deref().map(|m| format!("  drift detection {m}")).unwrap_or_default();
    let revision = g.revision.as_deref().map(|r| format!("  revision {r}")).unwrap_or_default();
    writeln!(out, "  {} {}{mode}{revision}", theme.dim(&format!("{}:", g.controller)), g.title())?;
    if !g.conditions.is_empty() {
        writeln!(out, "  {} {}", theme.dim(&format!("{} says:", g.controller)), g.conditions_line())?;
    }
    if let Some(v) = &g.verdict {
        verdict(out, &g.controller, v, theme)?;
    }
    if let Some(t) = &g.tracking {
        let from = g.tracking_from.as_deref().map(|f| format!(" ({f})")).unwrap_or_default();
        writeln!(out, "  {} {t}{from}", theme.dim("tracking:"))?;
    }
    if let Some(e) = &g.error {
        writeln!(out, "  {} {e}", theme.dim(&format!("{}:", g.controller)))?;
    }
    writeln!(out, "  {} {}", theme.dim("next:"), g.next)
}

/// The controller's own drift verdict (its message in one line), then ours beside it: whether
/// we agree, or the disagreement in words.
fn verdict<W: Write>(
    out: &mut W,
    controller: &str,
    v: &crate::report::gitops::Verdict,
    theme: &Theme,
) -> io::Result<()> {
    let says = if v.drifted { "drifted" } else { "no drift" };
    let mut detail: Vec<String> = v.reason.iter().cloned().collect();
    detail.extend(v.time.iter().map(|t| format!("since {t}")));
    let detail = if detail.is_empty() { String::new() } else { format!(" ({})", detail.join(", ")) };
    let message = v
        .message
        .as_deref()
        .map(|m| format!(": {}", m.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")))
        .unwrap_or_default();
    writeln!(out, "  {} {says}{detail}{message}", theme.dim(&format!("{controller} verdict:")))?;
    match &v.disagreement {
        Some(d) => writeln!(out, "  {} {d}", theme.dim("we disagree:")),
        None => writeln!(out, "  {} {}", theme.dim("we agree:"), if v.we_find_drift { "drifted" } else { "no drift" }),
    }
}

/// Render one release.
pub fn release<W: Write>(out: &mut W, r: &ReleaseReport, theme: &Theme) -> io::Result<()> {
    let rel = &r.origin;
    let chart =
        if rel.chart.is_empty() { String::new() } else { format!("  chart {}-{}", rel.chart, rel.chart_version) };
    writeln!(
        out,
        "{} {}  namespace {}  revision {}{chart}{}  {}",
        theme.heading("Release"),
        theme.heading(&rel.name),
        rel.namespace,
        rel.revision,
        helm_state(rel),
        status_word(r.status, theme)
    )?;
    if let Some(d) = &rel.helm_description {
        writeln!(out, "  {} {d}", theme.dim("helm:"))?;
    }
    if let Some(g) = &rel.gitops {
        gitops(out, g, theme)?;
    }
    if let (Some(n), Some(l)) = (newer_status(rel), rel.latest_revision) {
        writeln!(
            out,
            "  {}",
            theme.dim(&format!(
                "compared with deployed revision {} and with {n} revision {l}: what matches revision {l} was done by Helm",
                rel.revision
            ))
        )?;
    }
    problem(out, r, theme)?;
    for o in &r.objects {
        object_in(out, o, theme, newer_status(rel))?;
    }
    reconcile(out, r, theme)
}

/// One line per release (`-q`).
pub fn release_line<W: Write>(out: &mut W, r: &ReleaseReport, theme: &Theme) -> io::Result<()> {
    let rel = &r.origin;
    let by_hand = r.objects.iter().filter(|o| o.is_hand_drift()).count();
    let by_newer = r
        .objects
        .iter()
        .filter(|o| o.from_revision.is_some() || o.fields.iter().any(|f| f.from_revision.is_some()))
        .count();
    let from_newer = match (newer_status(rel), rel.latest_revision) {
        (Some(n), Some(l)) if by_newer > 0 => format!(", {by_newer} object(s) changed by {n} revision {l}"),
        _ => String::new(),
    };
    let detail = match r.status {
        Status::Clean => String::new(),
        Status::Drifted => format!("  {by_hand} object(s) drifted{from_newer}"),
        Status::Incomplete => format!("  {}", from_newer.trim_start_matches(", ")),
        Status::Error => format!("  {}", r.error().unwrap_or_default()),
    };
    writeln!(
        out,
        "{}/{}  revision {}{}  {}{}",
        rel.namespace,
        rel.name,
        rel.revision,
        helm_state(rel),
        status_word(r.status, theme),
        detail.trim_end()
    )
}

/// The whole report.
pub fn report<W: Write>(out: &mut W, rep: &DriftReport, theme: &Theme, quiet: bool) -> io::Result<()> {
    if rep.releases.is_empty() {
        return writeln!(out, "no Helm releases found");
    }
    for (i, r) in rep.releases.iter().enumerate() {
        if quiet {
            release_line(out, r, theme)?;
        } else {
            if i > 0 {
                writeln!(out)?;
            }
            release(out, r, theme)?;
        }
    }
    let s = &rep.summary;
    if !quiet || rep.releases.len() > 1 {
        writeln!(
            out,
            "{}",
            theme.dim(&format!(
                "{} release(s): {} clean, {} drifted, {} incomplete, {} error(s); {} object(s) checked, {} drifted",
                s.releases, s.clean, s.drifted, s.incomplete, s.errors, s.objects, s.drifted_objects
            ))
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{DriftReport, FieldReport, ObjectReport, ReleaseOrigin, ReleaseReport};
    use serde_json::json;

    fn f(
        path: &str,
        change: Change,
        desired: Option<Value>,
        live: Option<Value>,
        manager: Option<&str>,
    ) -> FieldReport {
        FieldReport {
            history: None,
            path: path.parse().unwrap(),
            change,
            desired,
            live,
            manager: manager.map(str::to_string),
            time: manager.map(|_| "2026-11-30T03:00:00Z".to_string()),
            reason: None,
            from_revision: None,
            admission: None,
        }
    }

    #[test]
    fn a_field_with_history_says_since_when_how_often_and_by_whom() {
        let mut field = f("spec.replicas", Change::Changed, Some(json!(2)), Some(json!(5)), Some("kubectl"));
        let mut plain = Vec::new();
        super::field(&mut plain, &field, &Theme::new(false), "  ").unwrap();
        field.history = Some(crate::report::history::FieldHistory {
            since: "2026-12-01T10:02:11Z".into(),
            first_seen: "2026-11-28T08:00:00Z".into(),
            last_seen: "2026-12-04T14:10:00Z".into(),
            episodes: 2,
            managers: vec!["kubectl".into(), "kubectl-edit".into()],
            age: 3 * 86400 + 4 * 3600 + 59,
        });
        let mut out = Vec::new();
        super::field(&mut out, &field, &Theme::new(false), "  ").unwrap();
        let out = String::from_utf8(out).unwrap();
        let plain = String::from_utf8(plain).unwrap();
        assert_eq!(
            out,
            format!("{plain}      drifted since 3d 4h (2026-12-01T10:02:11Z), 2 episodes, by kubectl, kubectl-edit\n")
        );
    }

    fn obj(kind: &str, name: &str, state: ObjectState, fields: Vec<FieldReport>) -> ObjectReport {
        ObjectReport { fields, ..ObjectReport::new("v1", kind, Some("shop".into()), name, state) }
    }

    fn sample() -> DriftReport {
        let mut ignored =
            f("spec.replicas", Change::Changed, Some(json!(1)), Some(json!(2)), Some("kube-controller-manager"));
        ignored.reason = Some("replicas are managed by HorizontalPodAutoscaler shop/worker".into());
        let drifted = ReleaseReport {
            objects: vec![
                obj("NetworkPolicy", "web", ObjectState::Missing, vec![]),
                obj(
                    "ConfigMap",
                    "config",
                    ObjectState::Changed,
                    vec![
                        f(
                            r#"data["app.yaml"]"#,
                            Change::Changed,
                            Some(json!("a: 1\nb: 2\nc: 3\n")),
                            Some(json!("a: 1\nb: 9\nc: 3\n")),
                            Some("kubectl-edit"),
                        ),
                        f(r#"data["extra.conf"]"#, Change::Added, None, Some(json!("x=1")), Some("kubectl-patch")),
                    ],
                ),
                obj(
                    "Deployment",
                    "web",
                    ObjectState::Changed,
                    vec![
                        f("spec.replicas", Change::Changed, Some(json!(2)), Some(json!(5)), Some("kubectl")),
                        f(
                            "spec.template.spec.containers[name=web].env[name=DEBUG]",
                            Change::Added,
                            None,
                            Some(json!({"name": "DEBUG", "value": "1"})),
                            Some("kubectl-set"),
                        ),
                        f(
                            "spec.template.spec.containers[name=web].env[name=OLD]",
                            Change::Removed,
                            Some(json!({"name": "OLD", "value": "x"})),
                            None,
                            None,
                        ),
                    ],
                ),
                obj(
                    "Secret",
                    "creds",
                    ObjectState::Changed,
                    vec![f(
                        "data.password",
                        Change::Changed,
                        Some(json!("<redacted, 28 bytes, sha256:205343c5>")),
                        Some(json!("<redacted, 18 bytes, sha256:1a2b3c4d>")),
                        Some("kubectl-patch"),
                    )],
                ),
                obj("ConfigMap", "hand-made", ObjectState::Extra, vec![]),
                obj("Deployment", "worker", ObjectState::Ignored, vec![ignored]),
            ],
            reconcile: vec![
                "helm rollback shop 3 -n shop".into(),
                "# kubectl delete configmap/hand-made -n shop   # extra object".into(),
            ],
            ..ReleaseReport::new(
                ReleaseOrigin {
                    gitops: None,
                    name: "shop".into(),
                    namespace: "shop".into(),
                    revision: 3,
                    chart: "shop".into(),
                    chart_version: "1.2.0".into(),
                    app_version: "4.5.6".into(),
                    helm_status: Some("deployed".into()),
                    latest_revision: Some(3),
                    helm_description: None,
                    values_digest: None,
                },
                Status::Drifted,
            )
        };
        let clean = ReleaseReport {
            objects: vec![],
            reconcile: vec![],
            ..ReleaseReport::new(
                ReleaseOrigin {
                    gitops: None,
                    name: "api".into(),
                    namespace: "shop".into(),
                    revision: 1,
                    chart: "api".into(),
                    chart_version: "0.1.0".into(),
                    app_version: "1".into(),
                    helm_status: Some("deployed".into()),
                    latest_revision: Some(1),
                    helm_description: None,
                    values_digest: None,
                },
                Status::Clean,
            )
        };
        let broken = ReleaseReport {
            problem: Some(Problem::failed("Secret legacy/sh.helm.release.v1.old.v2: release data is not valid base64")),
            objects: vec![],
            reconcile: vec![],
            ..ReleaseReport::new(
                ReleaseOrigin {
                    gitops: None,
                    name: "old".into(),
                    namespace: "legacy".into(),
                    revision: 2,
                    chart: String::new(),
                    chart_version: String::new(),
                    app_version: String::new(),
                    helm_status: None,
                    latest_revision: None,
                    helm_description: None,
                    values_digest: None,
                },
                Status::Error,
            )
        };
        let mut from_upgrade = f(
            "spec.template.spec.containers[name=web].image",
            Change::Changed,
            Some(json!("web:1.27")),
            Some(json!("web:2.5.0")),
            Some("helm"),
        );
        from_upgrade.from_revision = Some(2);
        let mut dropped = obj("NetworkPolicy", "cart-web", ObjectState::Missing, vec![]);
        dropped.from_revision = Some(2);
        let failed_upgrade = ReleaseReport {
            objects: vec![dropped, obj("Deployment", "cart-web", ObjectState::Changed, vec![from_upgrade])],
            reconcile: vec![
                "helm rollback cart 1 -n shop   # back to deployed revision 1: undoes what failed revision 2 applied"
                    .into(),
            ],
            ..ReleaseReport::new(
                ReleaseOrigin {
                    gitops: None,
                    name: "cart".into(),
                    namespace: "shop".into(),
                    revision: 1,
                    chart: "cart".into(),
                    chart_version: "0.3.0".into(),
                    app_version: "1".into(),
                    helm_status: Some("failed".into()),
                    latest_revision: Some(2),
                    helm_description: Some("Upgrade \"cart\" failed: context deadline exceeded".into()),
                    values_digest: None,
                },
                Status::Incomplete,
            )
        };
        DriftReport::new(vec![drifted, clean, broken, failed_upgrade], 25)
    }

    fn render(quiet: bool, theme: Theme) -> String {
        let mut buf = Vec::new();
        report(&mut buf, &sample(), &theme, quiet).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn the_controller_s_verdict_is_shown_beside_ours_and_a_disagreement_in_words() {
        use crate::report::gitops::{GitOps, Verdict};
        let mut g = GitOps {
            controller: "flux".into(),
            kind: "HelmRelease".into(),
            namespace: "flux-system".into(),
            name: "shop".into(),
            next: "Flux only reports the drift".into(),
            verdict: Some(Verdict {
                drifted: true,
                reason: Some("DriftDetected".into()),
                message: Some("Cluster state of release shop/shop.v1 has drifted from the desired state:\nDeployment/shop/web changed (0 additions, 1 changes, 0 removals)".into()),
                time: Some("2026-12-05T01:00:00Z".into()),
                we_find_drift: true,
                agrees: true,
                disagreement: None,
            }),
            ..GitOps::default()
        };
        let text = |g: &GitOps| {
            let mut out = Vec::new();
            gitops(&mut out, g, &Theme::plain()).unwrap();
            String::from_utf8(out).unwrap()
        };
        let agreed = text(&g);
        assert!(
            agreed.contains(
                "  flux verdict: drifted (DriftDetected, since 2026-12-05T01:00:00Z): Cluster state of release \
                 shop/shop.v1 has drifted from the desired state:; Deployment/shop/web changed (0 additions, 1 \
                 changes, 0 removals)\n  we agree: drifted\n"
            ),
            "{agreed}"
        );
        let v = g.verdict.as_mut().unwrap();
        (v.drifted, v.reason, v.message) = (false, Some("NoDriftDetected".into()), None);
        v.agrees = false;
        v.disagreement = Some("Flux says no drift, we find 1 field added by hand".into());
        let disagreed = text(&g);
        assert!(
            disagreed.contains("  flux verdict: no drift (NoDriftDetected, since 2026-12-05T01:00:00Z)\n"),
            "{disagreed}"
        );
        assert!(
            disagreed.contains("  we disagree: Flux says no drift, we find 1 field added by hand\n"),
            "{disagreed}"
        );
    }

    #[test]
    fn text_report_snapshot() {
        insta::assert_snapshot!(render(false, Theme::plain()));
    }

    #[test]
    fn quiet_report_snapshot() {
        insta::assert_snapshot!(render(true, Theme::plain()));
    }

    #[test]
    fn colour_only_when_asked() {
        assert!(!render(false, Theme::plain()).contains('\x1b'));
        assert!(render(false, Theme::new(true)).contains('\x1b'));
    }

    /// A multi-line value prints the lines of `diff::lines` (the lines the dashboard shows),
    /// each under the field, removed in the desired colour and added in the live colour.
    #[test]
    fn multi_line_values_print_the_shared_diff_lines() {
        let desired = "server:\n  port: 8080\n  timeout: 30s\nfeatures:\n  search: true\n";
        let live = desired.replace("30s", "120s");
        let fr =
            f(r#"data["app.yaml"]"#, Change::Changed, Some(json!(desired)), Some(json!(live)), Some("kubectl-edit"));
        let mut out = Vec::new();
        field(&mut out, &fr, &Theme::plain(), "  ").unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut want = "  ~ data[\"app.yaml\"]:  (kubectl-edit, 2026-11-30T03:00:00Z)\n".to_string();
        for l in super::super::diff::field_lines(&fr).unwrap() {
            want.push_str(&format!("      {}\n", l.text));
        }
        assert_eq!(text, want);
        assert!(text.contains("      -  timeout: 30s\n      +  timeout: 120s\n"), "{text}");

        let theme = Theme::new(true);
        let mut out = Vec::new();
        field(&mut out, &fr, &theme, "  ").unwrap();
        let coloured = String::from_utf8(out).unwrap();
        assert!(coloured.contains(&theme.desired("-  timeout: 30s")), "{coloured}");
        assert!(coloured.contains(&theme.live("+  timeout: 120s")), "{coloured}");
        assert!(coloured.contains(&theme.dim("@@ -1,5 +1,5 @@")), "{coloured}");
    }
}

/// Render one manifests file: a header (path, who applied it, status), then its objects and the
/// reconcile commands, as for a release.
pub fn file<W: Write>(out: &mut W, f: &FileReport, theme: &Theme) -> io::Result<()> {
    let applied = match (&f.origin.field_manager, f.origin.server_side) {
        (Some(m), true) => format!("  applied by {m} (server-side)"),
        (Some(m), false) => format!("  applied by {m}"),
        (None, _) => String::new(),
    };
    let what = match f.origin.source_type {
        SourceType::File => "File",
        SourceType::Kustomization => "Kustomization",
        SourceType::FluxKustomization => "Flux Kustomization",
        SourceType::ArgoApplication => "Argo CD Application",
    };
    writeln!(
        out,
        "{} {}{applied}  {}",
        theme.heading(what),
        theme.heading(&f.origin.path),
        status_word(f.status, theme)
    )?;
    if let Some(g) = &f.origin.gitops {
        gitops(out, g, theme)?;
    }
    problem(out, f, theme)?;
    for o in &f.objects {
        object(out, o, theme)?;
    }
    for s in &f.origin.skipped {
        let ns = s.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default();
        writeln!(
            out,
            "  {} {}  {}",
            theme.object(&format!("{} {ns}{}*", s.kind, s.generate_name)),
            theme.dim(&format!("({})", s.source)),
            theme.dim(&format!("skipped: {}", s.reason))
        )?;
    }
    reconcile(out, f, theme)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The manifests report. The summary always ends the output: `checked N files (M objects):
/// a clean, b drifted, c errors`, then `OK no drift` or the drifted and failed files. `quiet`
/// prints only the summary.
pub fn manifests_report<W: Write>(out: &mut W, rep: &ManifestsReport, theme: &Theme, quiet: bool) -> io::Result<()> {
    if !quiet {
        for f in &rep.files {
            file(out, f, theme)?;
        }
        for s in &rep.skipped {
            writeln!(out, "{} {}  {}", theme.heading("Skipped"), theme.heading(&s.path), theme.dim(&s.reason))?;
        }
        if let Some(e) = &rep.extra {
            extra(out, e, theme)?;
        }
    }
    let s = &rep.summary;
    let mut also = String::new();
    if s.extra > 0 {
        also.push_str(&format!(", {}", plural(s.extra, "extra object", "extra objects")));
    }
    if s.skipped > 0 {
        also.push_str(&format!(", {} skipped", s.skipped));
    }
    writeln!(
        out,
        "checked {} ({}): {} clean, {} drifted, {}{also}",
        plural(s.files, "file", "files"),
        plural(s.objects, "object", "objects"),
        s.clean,
        s.drifted,
        plural(s.errors, "error", "errors")
    )?;
    if rep.status() == Status::Clean {
        return writeln!(out, "{}", theme.clean("OK no drift"));
    }
    for f in rep.files.iter().filter(|f| f.status == Status::Drifted) {
        writeln!(out, "{} {}", theme.drifted("DRIFTED"), f.origin.path)?;
    }
    for o in rep.extra.iter().flat_map(|e| &e.objects).filter(|o| o.is_drift()) {
        writeln!(out, "{} {}", theme.drifted("EXTRA"), o.title())?;
    }
    for f in rep.files.iter().filter(|f| f.status == Status::Error) {
        writeln!(out, "{} {}", theme.error("ERROR"), f.origin.path)?;
    }
    if let Some(e) = rep.extra.as_ref().filter(|e| e.status == Status::Error) {
        writeln!(out, "{} extra objects ({})", theme.error("ERROR"), e.origin.selectors.join(", "))?;
    }
    Ok(())
}

/// The search for extra objects: what was searched, what was found, the commented deletes.
fn extra<W: Write>(out: &mut W, e: &ExtraReport, theme: &Theme) -> io::Result<()> {
    writeln!(
        out,
        "{} {}  {}",
        theme.heading("Extra objects"),
        theme.heading(&format!("({} in {})", e.origin.selectors.join(", "), e.origin.namespaces.join(", "))),
        status_word(e.status, theme)
    )?;
    problem(out, e, theme)?;
    for o in &e.objects {
        let title = theme.object(&o.title());
        match o.state {
            ObjectState::Extra => {
                writeln!(out, "  {title}  {}", theme.drifted("EXTRA (carries these labels, in no file)"))?
            }
            _ => object(out, o, theme)?,
        }
    }
    reconcile(out, e, theme)
}

/// One line per problem, for stderr (so cron and CI logs show why a run exited 2): the file's
/// own errors, then each object that could not be checked.
pub fn manifests_errors<W: Write>(out: &mut W, rep: &ManifestsReport) -> io::Result<()> {
    for f in rep.files.iter().filter(|f| f.status == Status::Error) {
        let objects: Vec<&ObjectReport> = f.objects.iter().filter(|o| o.state == ObjectState::Error).collect();
        // When the file's message only counts its failed objects, they are listed instead.
        let only_counts = !objects.is_empty() && matches!(f.problem, Some(Problem::ObjectsUnchecked(_)));
        if let Some(e) = f.problem.as_ref().filter(|_| !only_counts).map(ToString::to_string) {
            if e.starts_with(&f.origin.path) {
                writeln!(out, "error: {e}")?;
            } else {
                writeln!(out, "error: {}: {e}", f.origin.path)?;
            }
        }
        for o in objects {
            writeln!(out, "error: {}: {}: {}", f.origin.path, o.title(), o.error.as_deref().unwrap_or(""))?;
        }
    }
    if let Some(err) = rep.extra.as_ref().and_then(|e| e.error()) {
        writeln!(out, "error: extra objects: {err}")?;
    }
    Ok(())
}

#[cfg(test)]
mod manifests_tests {
    use super::*;
    use crate::report::{FileOrigin, FileReport};

    fn file_report(path: &str, status: Status, error: Option<&str>) -> FileReport {
        FileReport {
            problem: error.map(|e| Problem::Failed(vec![e.to_string()])),
            objects: Vec::new(),
            reconcile: if status == Status::Drifted {
                vec!["kubectl apply -f k/b.yaml -n x --server-side --force-conflicts".into()]
            } else {
                Vec::new()
            },
            ..FileReport::new(
                FileOrigin {
                    gitops: None,
                    path: path.into(),
                    field_manager: (status != Status::Error).then(|| "kubectl".to_string()),
                    server_side: true,
                    source_type: SourceType::File,
                    skipped: Vec::new(),
                },
                status,
            )
        }
    }

    fn render(rep: &ManifestsReport, quiet: bool) -> String {
        let mut out = Vec::new();
        manifests_report(&mut out, rep, &Theme::plain(), quiet).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn summary_ends_the_output() {
        let rep = ManifestsReport::new(
            vec![
                file_report("k/a.yaml", Status::Clean, None),
                file_report("k/b.yaml", Status::Drifted, None),
                file_report("k/c.yaml", Status::Error, Some("k/c.yaml: document 2 is not valid YAML: x")),
            ],
            4,
        );
        assert_eq!(
            render(&rep, false),
            "File k/a.yaml  applied by kubectl (server-side)  CLEAN\n\
             File k/b.yaml  applied by kubectl (server-side)  DRIFTED\n\
             \x20 Reconcile (review, then run in order):\n\
             \x20   kubectl apply -f k/b.yaml -n x --server-side --force-conflicts\n\
             File k/c.yaml  ERROR\n\
             \x20 error: k/c.yaml: document 2 is not valid YAML: x\n\
             checked 3 files (4 objects): 1 clean, 1 drifted, 1 error\n\
             DRIFTED k/b.yaml\n\
             ERROR k/c.yaml\n"
        );
        assert_eq!(
            render(&rep, true),
            "checked 3 files (4 objects): 1 clean, 1 drifted, 1 error\nDRIFTED k/b.yaml\nERROR k/c.yaml\n"
        );
        let mut err = Vec::new();
        manifests_errors(&mut err, &rep).unwrap();
        assert_eq!(String::from_utf8(err).unwrap(), "error: k/c.yaml: document 2 is not valid YAML: x\n");
    }

    #[test]
    fn skipped_and_extra_objects_are_shown_and_counted() {
        use crate::report::{ExtraOrigin, ExtraReport, SkippedPath};
        let mut jobs = file_report("k/jobs.yaml", Status::Clean, None);
        jobs.origin.skipped.push(crate::report::SkippedObject {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            generate_name: "migrate-".into(),
            namespace: None,
            source: "k/jobs.yaml#1".into(),
            reason: "no name".into(),
        });
        let extra = ExtraReport {
            objects: vec![ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "hand", ObjectState::Extra)],
            reconcile: vec!["# kubectl delete configmap/hand -n shop   # extra".into()],
            ..ExtraReport::new(
                ExtraOrigin { selectors: vec!["app=shop".into()], namespaces: vec!["shop".into()] },
                Status::Drifted,
            )
        };
        let skipped = vec![SkippedPath { path: "k/charts/x".into(), reason: "a Helm chart".into() }];
        let rep = ManifestsReport::with_extra(vec![jobs], skipped, Some(extra), 0);
        assert_eq!(rep.status(), Status::Drifted);
        assert_eq!(
            render(&rep, false),
            "File k/jobs.yaml  applied by kubectl (server-side)  CLEAN\n\
             \x20 Job migrate-* (k/jobs.yaml#1)  skipped: no name\n\
             Skipped k/charts/x  a Helm chart\n\
             Extra objects (app=shop in shop)  DRIFTED\n\
             \x20 ConfigMap shop/hand  EXTRA (carries these labels, in no file)\n\
             \x20 Reconcile (review, then run in order):\n\
             \x20   # kubectl delete configmap/hand -n shop   # extra\n\
             checked 1 file (0 objects): 1 clean, 0 drifted, 0 errors, 1 extra object, 2 skipped\n\
             EXTRA ConfigMap shop/hand\n"
        );
        assert_eq!(
            render(&rep, true),
            "checked 1 file (0 objects): 1 clean, 0 drifted, 0 errors, 1 extra object, 2 skipped\nEXTRA ConfigMap shop/hand\n"
        );

        // A search that failed is an error of the run, in the summary and on stderr.
        let failed = ExtraReport::failed(
            ExtraOrigin { selectors: vec!["app=shop".into()], namespaces: Vec::new() },
            "forbidden to list secrets",
        );
        let rep =
            ManifestsReport::with_extra(vec![file_report("a.yaml", Status::Clean, None)], vec![], Some(failed), 1);
        assert_eq!(rep.status(), Status::Error);
        assert_eq!(
            render(&rep, true),
            "checked 1 file (1 object): 1 clean, 0 drifted, 0 errors\nERROR extra objects (app=shop)\n"
        );
        let mut err = Vec::new();
        manifests_errors(&mut err, &rep).unwrap();
        assert_eq!(String::from_utf8(err).unwrap(), "error: extra objects: forbidden to list secrets\n");
    }

    #[test]
    fn clean_runs_say_ok() {
        let rep = ManifestsReport::new(vec![file_report("a.yaml", Status::Clean, None)], 1);
        assert_eq!(render(&rep, true), "checked 1 file (1 object): 1 clean, 0 drifted, 0 errors\nOK no drift\n");
    }
}

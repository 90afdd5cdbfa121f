//! Alerts: what a message says (pure functions, tested without a network), and posting it to a
//! Slack incoming webhook (mrkdwn text) or any webhook (the JSON event), with retries and backoff.
//!
//! Webhook URLs are secrets of their own: they are never logged, and errors name only which
//! webhook failed and how.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;

use super::error::NotifyError;
use crate::report::{FieldReport, ObjectReport, ObjectState, TargetReport};

/// Kinds of alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// New or changed drift.
    Drift,
    /// Drift (or an error) that is gone.
    Resolved,
    /// The check could not be completed.
    Error,
    /// Information only: the release's values changed (not drift).
    Info,
    /// A release entered a failed or pending Helm state (a failed or interrupted install,
    /// upgrade or rollback), or left it.
    Status,
}

impl EventKind {
    /// The kind as the webhook's JSON names it (`drift`, `resolved`, ...), for metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Drift => "drift",
            EventKind::Resolved => "resolved",
            EventKind::Error => "error",
            EventKind::Info => "info",
            EventKind::Status => "status",
        }
    }
}

/// One alert, as posted to `--webhook` (JSON) and turned into text for Slack.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub kind: EventKind,
    /// The cluster (kube context) it happened in.
    pub cluster: String,
    /// `release`, `manifests` or `cluster` (the kind of its target, [`crate::report::Origin::kind`]).
    pub target_type: String,
    /// Release name, or the manifests path.
    pub target: String,
    pub namespace: Option<String>,
    pub revision: Option<u32>,
    /// Objects with drift (secret values already redacted).
    pub objects: Vec<ObjectReport>,
    pub reconcile: Vec<String>,
    pub error: Option<String>,
    /// A release's Helm status (its newest revision's): `deployed`, `failed`, `pending-upgrade`...
    pub helm_status: Option<String>,
    /// Notes such as "values changed since the last round (revision 2 → 3)".
    pub notes: Vec<String>,
}

impl Event {
    /// The alert of `kind` about `target`: its drift by hand (with the commands) for a drift
    /// alert, its problem for an error alert.
    pub fn new(kind: EventKind, target: &TargetReport, notes: Vec<String>) -> Event {
        let drift = kind == EventKind::Drift;
        Event {
            kind,
            cluster: target.cluster.clone(),
            target_type: target.origin.kind().to_string(),
            target: target.origin.name(),
            namespace: target.origin.namespace().map(str::to_string),
            revision: target.origin.revision(),
            objects: if drift {
                target.objects.iter().filter_map(ObjectReport::hand_drift).collect()
            } else {
                Vec::new()
            },
            reconcile: if drift { target.reconcile.clone() } else { Vec::new() },
            error: if kind == EventKind::Error { target.error() } else { None },
            helm_status: target.origin.release().and_then(|r| r.helm_status.clone()),
            notes,
        }
    }
}

/// How many fields an alert lists before "and N more".
pub const MAX_FIELDS: usize = 10;

/// How many lines of one multi-line value's diff an alert shows (hunk headers and context
/// included) before saying how many it left out; each line is cut at [`MAX_DIFF_LINE`]
/// characters. With [`MAX_FIELDS`] fields that keeps a message well under the 4,000 characters
/// Slack advises for a message's text.
pub const MAX_DIFF_LINES: usize = 12;
pub const MAX_DIFF_LINE: usize = 100;

/// A multi-line value's change as the alert shows it: the changed lines with two lines of context
/// (the CLI's unified diff, [`crate::render::diff::lines`], without its `---`/`+++` header), in a
/// code block, shortened to [`MAX_DIFF_LINES`] with a note of what was left out. Values are the
/// report's, so a Secret's are already redacted (one line, never shown as a diff).
fn diff_block(desired: &str, live: &str) -> String {
    use crate::render::diff::{LineKind, lines};
    let shown: Vec<String> = lines(desired, live)
        .into_iter()
        .filter(|l| l.kind != LineKind::Header)
        .map(|l| {
            let text = l.text.replace("```", "`\u{200b}``");
            if text.chars().count() > MAX_DIFF_LINE {
                format!("{}…", text.chars().take(MAX_DIFF_LINE).collect::<String>())
            } else {
                text
            }
        })
        .collect();
    // A note never stands in for a single line.
    let keep = if shown.len() <= MAX_DIFF_LINES + 1 { shown.len() } else { MAX_DIFF_LINES };
    let mut out = String::from("```\n");
    for l in &shown[..keep] {
        out.push_str(l);
        out.push('\n');
    }
    if keep < shown.len() {
        out.push_str(&format!("… {} more line(s) of this diff left out\n", shown.len() - keep));
    }
    out.push_str("```");
    out
}

fn field_line(o: &ObjectReport, f: &FieldReport) -> String {
    let v = |x: &Option<serde_json::Value>| -> String {
        let s = match x {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => "(unset)".into(),
        };
        let s = s.replace('\n', "⏎");
        if s.chars().count() > 60 { format!("{}…", s.chars().take(60).collect::<String>()) } else { s }
    };
    let who = f.manager.as_deref().map(|m| format!(" _by {m}_")).unwrap_or_default();
    if let Some((desired, live)) = crate::render::diff::texts(f) {
        return format!("• {} — `{}` changed{who}:\n{}", o.title(), f.path, diff_block(desired, live));
    }
    let what = match f.change {
        crate::report::field::Change::Changed => format!("`{}` {} → {}", f.path, v(&f.desired), v(&f.live)),
        crate::report::field::Change::Added => format!("`{}` added: {}", f.path, v(&f.live)),
        crate::report::field::Change::Removed => format!("`{}` removed (was {})", f.path, v(&f.desired)),
    };
    format!("• {} — {what}{who}", o.title())
}

/// The Slack mrkdwn text of an event.
pub fn slack_text(e: &Event) -> String {
    let target = match (&e.namespace, e.target_type.as_str()) {
        (Some(ns), "release") => format!(
            "release *{}* (namespace `{ns}`{})",
            e.target,
            e.revision.map(|r| format!(", revision {r}")).unwrap_or_default()
        ),
        _ => format!("{} *{}*", e.target_type, e.target),
    };
    // Every alert names its cluster: one channel often hears from several.
    let target = if e.cluster.is_empty() { target } else { format!("{target} in cluster `{}`", e.cluster) };
    let mut out = match e.kind {
        EventKind::Drift => format!(":warning: *Drift detected* in {target}\n"),
        EventKind::Resolved => {
            format!(":white_check_mark: *Drift resolved* in {target}: it matches the desired state again\n")
        }
        EventKind::Error => {
            format!(":x: *Drift check failed* for {target}: {}\n", e.error.as_deref().unwrap_or("unknown error"))
        }
        EventKind::Info => format!(":information_source: {target}\n"),
        EventKind::Status => match e.helm_status.as_deref() {
            Some(s) if crate::source::helm::storage::is_settled(s) => {
                format!(":white_check_mark: *Helm release {s} again*: {target}\n")
            }
            s => format!(":rotating_light: *Helm release {}*: {target}\n", s.unwrap_or("incomplete")),
        },
    };
    for n in &e.notes {
        out.push_str(&format!("_{n}_\n"));
    }
    if e.kind == EventKind::Drift {
        let mut lines = Vec::new();
        for o in &e.objects {
            match o.state {
                ObjectState::Missing => lines.push(format!("• {} — *missing* (deleted live)", o.title())),
                ObjectState::Extra => {
                    lines.push(format!("• {} — *extra* (carries the release's labels, not in the manifest)", o.title()))
                }
                ObjectState::Changed => {
                    for f in o.fields.iter().filter(|f| f.reason.is_none()) {
                        lines.push(field_line(o, f));
                    }
                }
                _ => {}
            }
        }
        let total = lines.len();
        for l in lines.iter().take(MAX_FIELDS) {
            out.push_str(l);
            out.push('\n');
        }
        if total > MAX_FIELDS {
            out.push_str(&format!("…and {} more\n", total - MAX_FIELDS));
        }
    }
    if matches!(e.kind, EventKind::Drift | EventKind::Status) && !e.reconcile.is_empty() {
        out.push_str("*Reconcile* (review, then run in order):\n```\n");
        for c in &e.reconcile {
            out.push_str(c);
            out.push('\n');
        }
        out.push_str("```\n");
    }
    out
}

/// The JSON a `--webhook` receives: the event, and under `text` the message Slack gets (mrkdwn),
/// so a receiver that only relays text (a chat bridge) shows what changed.
pub fn webhook_body(e: &Event) -> String {
    #[derive(Serialize)]
    struct Body<'a> {
        #[serde(flatten)]
        event: &'a Event,
        text: String,
    }
    serde_json::to_string(&Body { event: e, text: slack_text(e) }).expect("events always serialise")
}

/// How long one webhook post may take before the receiver is called stalled.
pub const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// Posts alerts.
pub struct Notifier {
    client: Client<hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>, Full<Bytes>>,
    pub slack: Option<String>,
    pub webhook: Option<String>,
    pub attempts: u32,
    pub backoff: Duration,
}

impl Notifier {
    pub fn new(slack: Option<String>, webhook: Option<String>) -> Result<Notifier, NotifyError> {
        for (which, url) in [("Slack", &slack), ("generic", &webhook)] {
            if let Some(u) = url {
                let ok = u
                    .parse::<hyper::Uri>()
                    .ok()
                    .is_some_and(|uri| matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some());
                if !ok {
                    return Err(NotifyError::BadUrl { which });
                }
            }
        }
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| NotifyError::Tls(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(https);
        Ok(Notifier { client, slack, webhook, attempts: 4, backoff: Duration::from_millis(500) })
    }

    /// Whether any destination is configured.
    pub fn enabled(&self) -> bool {
        self.slack.is_some() || self.webhook.is_some()
    }

    /// Post an event to every destination. Succeeds only if every destination accepted it.
    pub async fn send(&self, event: &Event) -> Result<(), NotifyError> {
        if let Some(url) = &self.slack {
            let body = serde_json::json!({ "text": slack_text(event), "mrkdwn": true });
            self.post("Slack", url, body.to_string()).await?;
        }
        if let Some(url) = &self.webhook {
            self.post("generic", url, webhook_body(event)).await?;
        }
        Ok(())
    }

    async fn post(&self, which: &'static str, url: &str, body: String) -> Result<(), NotifyError> {
        let mut delay = self.backoff;
        let mut reason = String::new();
        for attempt in 1..=self.attempts.max(1) {
            let req = hyper::Request::post(url)
                .header("content-type", "application/json")
                .header("user-agent", concat!("kubectl-drift/", env!("CARGO_PKG_VERSION")))
                .body(Full::new(Bytes::from(body.clone())))
                .map_err(|_| NotifyError::BadUrl { which })?;
            match tokio::time::timeout(POST_TIMEOUT, self.client.request(req)).await {
                Ok(Ok(resp)) if resp.status().is_success() => {
                    let _ = resp.into_body().collect().await;
                    return Ok(());
                }
                Ok(Ok(resp)) => reason = format!("HTTP status {}", resp.status()),
                // Connection errors are described by kind only: their text may hold the URL.
                Ok(Err(e)) => {
                    reason = if e.is_connect() { "could not connect".into() } else { "request failed".into() }
                }
                // A receiver that took the request and never answered may have it: posting again
                // would risk a duplicate and multiply the wait. The round fails (exit 2) with the
                // state not advanced, so the next round sends the alert again: none is lost.
                Err(_) => {
                    return Err(NotifyError::Failed {
                        which,
                        attempts: attempt,
                        reason: format!("no answer within {}s", POST_TIMEOUT.as_secs()),
                    });
                }
            }
            if attempt < self.attempts {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
        Err(NotifyError::Failed { which, attempts: self.attempts.max(1), reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::field::Change;
    use serde_json::json;

    #[test]
    fn kind_names_are_its_json() {
        for k in [EventKind::Drift, EventKind::Resolved, EventKind::Error, EventKind::Info, EventKind::Status] {
            assert_eq!(json!(k), json!(k.name()));
            assert_eq!(format!("{k:?}").to_lowercase(), k.name(), "the metrics' kind label");
        }
    }

    fn event(n: usize) -> Event {
        let fields = (0..n)
            .map(|i| FieldReport {
                history: None,
                path: format!("data.k{i}").parse().unwrap(),
                change: Change::Added,
                desired: None,
                live: Some(json!("v")),
                manager: Some("kubectl-edit".into()),
                time: Some("t".into()),
                reason: None,
                from_revision: None,
                admission: None,
            })
            .collect();
        Event {
            cluster: "prod-eu".into(),
            kind: EventKind::Drift,
            target_type: "release".into(),
            target: "shop".into(),
            namespace: Some("shop".into()),
            revision: Some(3),
            helm_status: Some("deployed".into()),
            objects: vec![ObjectReport {
                fields,
                ..ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "cfg", ObjectState::Changed)
            }],
            reconcile: vec!["helm rollback shop 3 -n shop".into()],
            error: None,
            notes: vec!["values changed since the last check (revision 2 → 3)".into()],
        }
    }

    #[test]
    fn slack_text_names_release_fields_manager_and_commands() {
        let t = slack_text(&event(2));
        assert!(
            t.contains("*Drift detected* in release *shop* (namespace `shop`, revision 3) in cluster `prod-eu`"),
            "{t}"
        );
        assert!(t.contains("`data.k0` added: v _by kubectl-edit_"), "{t}");
        assert!(t.contains("helm rollback shop 3 -n shop"));
        assert!(t.contains("values changed"));
    }

    #[test]
    fn slack_text_of_helm_status_changes() {
        let mut e = event(0);
        e.kind = EventKind::Status;
        e.helm_status = Some("failed".into());
        e.revision = Some(4);
        e.notes = vec!["revision 4 is failed: Upgrade \"shop\" failed: context deadline exceeded".into()];
        let t = slack_text(&e);
        assert!(
            t.starts_with(":rotating_light: *Helm release failed*: release *shop* (namespace `shop`, revision 4)"),
            "{t}"
        );
        assert!(t.contains("_revision 4 is failed: Upgrade"), "{t}");
        assert!(t.contains("*Reconcile*") && t.contains("helm rollback shop 3 -n shop"), "{t}");
        e.helm_status = Some("deployed".into());
        e.reconcile.clear();
        let t = slack_text(&e);
        assert!(t.starts_with(":white_check_mark: *Helm release deployed again*"), "{t}");
        assert!(!t.contains("*Reconcile*"), "{t}");
    }

    #[test]
    fn slack_text_caps_fields() {
        let t = slack_text(&event(MAX_FIELDS + 3));
        assert!(t.contains("…and 3 more"), "{t}");
        assert_eq!(t.matches("• ").count(), MAX_FIELDS);
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_them() {
        let err = Notifier::new(Some("not a url/secret-token".into()), None).err().unwrap().to_string();
        assert!(!err.contains("secret-token"), "{err}");
    }

    /// The JSON a `--webhook` receives (docs/output.md, section Watch): every field, so one that
    /// is renamed, added or dropped changes this snapshot.
    #[test]
    fn watch_event_schema() {
        let mut e = event(1);
        e.error = Some("forbidden to list configmaps in namespace shop: denied (403)".into());
        e.helm_status = Some("deployed".into());
        e.notes = vec!["values changed since the last round (revision 2 → 3)".into()];
        e.reconcile = vec!["helm rollback shop 3 -n shop".into()];
        let body: serde_json::Value = serde_json::from_str(&webhook_body(&e)).unwrap();
        insta::assert_snapshot!("watch_event_schema", serde_json::to_string_pretty(&body).unwrap());
    }

    fn changed(path: &str, desired: &str, live: &str) -> FieldReport {
        FieldReport {
            history: None,
            path: path.parse().unwrap(),
            change: Change::Changed,
            desired: Some(json!(desired)),
            live: Some(json!(live)),
            manager: Some("kubectl-edit".into()),
            time: None,
            reason: None,
            from_revision: None,
            admission: None,
        }
    }

    /// A long multi-line value changed deep inside: the alert shows the changed lines with their
    /// context (the CLI's diff lines), not two cut-off copies of the value's start.
    #[test]
    fn slack_text_shows_a_multi_line_change_as_its_changed_lines() {
        let desired = "server:\n  port: 8080\n  workers: 4\n  keepalive: on\n  compress: gzip\n  timeout: 30s\n\
                       cache:\n  size: 512Mi\n  ttl: 10m\nfeatures:\n  search: true\n  checkout: true\nlogLevel: info\n";
        let live = desired.replace("timeout: 30s", "timeout: 120s").replace("search: true", "search: false");
        let mut e = event(0);
        e.objects[0].fields = vec![changed(r#"data["app.yaml"]"#, desired, &live)];
        let t = slack_text(&e);
        assert!(t.contains("• ConfigMap shop/cfg — `data[\"app.yaml\"]` changed _by kubectl-edit_:\n```\n@@"), "{t}");
        for line in ["-  timeout: 30s", "+  timeout: 120s", "-  search: true", "+  search: false", "   compress: gzip"]
        {
            assert!(t.lines().any(|l| l == line), "{line:?} in\n{t}");
        }
        // The same lines as the CLI's diff, minus its ---/+++ header.
        let cli: Vec<String> = crate::render::diff::lines(desired, &live).into_iter().skip(2).map(|l| l.text).collect();
        let block: Vec<&str> = t.split("```\n").nth(1).unwrap().split("```").next().unwrap().lines().collect();
        assert_eq!(block, cli, "{t}");
        // The webhook JSON carries the same text.
        let body: serde_json::Value = serde_json::from_str(&webhook_body(&e)).unwrap();
        assert_eq!(body["text"], json!(t));
    }

    #[test]
    fn slack_text_shortens_a_long_diff_and_says_how_much_it_left_out() {
        let desired: String = (0..200).map(|i| format!("key{i}: {i}\n")).collect();
        let live: String = (0..200).map(|i| format!("key{i}: {}\n", if i % 10 == 0 { i + 1 } else { i })).collect();
        let mut e = event(0);
        e.objects[0].fields = vec![changed(r#"data["big.yaml"]"#, &desired, &live)];
        let t = slack_text(&e);
        let block = t.split("```\n").nth(1).unwrap().split("```").next().unwrap();
        let shown = crate::render::diff::lines(&desired, &live).len() - 2;
        assert_eq!(block.lines().count(), MAX_DIFF_LINES + 1, "{t}");
        assert!(block.ends_with(&format!("… {} more line(s) of this diff left out\n", shown - MAX_DIFF_LINES)), "{t}");
        assert!(t.chars().count() < 4000, "{}", t.chars().count());
    }

    /// A Secret's values are redacted in the report (one line each), so an alert never shows
    /// them as a diff, only the redaction marks.
    #[test]
    fn a_redacted_secret_value_is_never_a_diff() {
        let mut e = event(0);
        e.objects[0] = ObjectReport {
            fields: vec![changed(r#"data["password"]"#, "(redacted, sha256:1a2b)", "(redacted, sha256:3c4d)")],
            ..ObjectReport::new("v1", "Secret", Some("shop".into()), "creds", ObjectState::Changed)
        };
        let t = slack_text(&e);
        assert!(!t.contains("```\n@@"), "{t}");
    }
}

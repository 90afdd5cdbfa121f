//! The shipped monitoring (`deploy/monitoring/`): the alert rules pass `promtool check rules` and
//! their unit tests (`promtool test rules`); the Prometheus Operator copy has the same groups; the
//! scrape objects point at the ports `deploy/` exposes; the Grafana dashboard uses only the metrics
//! and labels `docs/metrics.md` documents, and every query parses as PromQL.
//!
//! The promtool tests need no cluster but the `promtool` that `scripts/test-env build` builds
//! (`DRIFT_PROMTOOL`): they run under `scripts/test` like the other e2e tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

fn yaml(path: &str) -> Value {
    serde_saphyr::from_str(&read(path)).unwrap_or_else(|e| panic!("parse {path}: {e}"))
}

fn yaml_docs(path: &str) -> Vec<Value> {
    serde_saphyr::from_multiple(&read(path)).unwrap_or_else(|e| panic!("parse {path}: {e}"))
}

fn dashboard() -> Value {
    serde_json::from_str(&read("deploy/monitoring/grafana-dashboard.json"))
        .unwrap_or_else(|e| panic!("deploy/monitoring/grafana-dashboard.json is not JSON: {e}"))
}

/// Run promtool with `args` in deploy/monitoring; its output on failure.
fn promtool(args: &[&str]) -> Result<String, String> {
    let bin = std::env::var("DRIFT_PROMTOOL")
        .expect("DRIFT_PROMTOOL is not set: scripts/test runs scripts/test-env, which builds promtool");
    let out = Command::new(&bin)
        .args(args)
        .current_dir(repo("deploy/monitoring"))
        .output()
        .unwrap_or_else(|e| panic!("run {bin}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() { Ok(text) } else { Err(format!("promtool {}: {}\n{text}", args.join(" "), out.status)) }
}

/// The rules of rules.yaml: (alert or record name, expression).
fn rules() -> Vec<(String, String)> {
    let file = yaml("deploy/monitoring/rules.yaml");
    let mut out = Vec::new();
    for g in file["groups"].as_array().expect("rules.yaml has groups") {
        for r in g["rules"].as_array().expect("each group has rules") {
            let name = r["alert"].as_str().or_else(|| r["record"].as_str()).expect("a rule is an alert or a record");
            out.push((name.to_string(), r["expr"].as_str().expect("a rule has an expr").to_string()));
        }
    }
    out
}

/// The metrics docs/metrics.md documents, each with its labels.
fn documented_metrics() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    let mut labels_column = None;
    for line in read("docs/metrics.md").lines() {
        let Some(row) = line.strip_prefix('|') else {
            labels_column = None;
            continue;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        if cells.first() == Some(&"metric") {
            labels_column = cells.iter().position(|c| *c == "labels");
            continue;
        }
        let Some(name) = cells.first().and_then(|c| c.strip_prefix('`')).and_then(|c| c.strip_suffix('`')) else {
            continue;
        };
        let labels = labels_column
            .and_then(|i| cells.get(i))
            .map(|c| c.split('`').skip(1).step_by(2).map(str::to_string).collect())
            .unwrap_or_default();
        out.insert(name.to_string(), labels);
    }
    out
}

/// The metric selectors of a PromQL expression: each metric name with the label names its
/// matchers use. Function and aggregation names, keywords, label lists (`by (...)`,
/// `on (...)`, ...), strings, durations and numbers are not selectors.
fn selectors(expr: &str) -> Vec<(String, Vec<String>)> {
    const AGGREGATIONS: &str =
        "sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio";
    const LABEL_LISTS: &[&str] = &["by", "without", "on", "ignoring", "group_left", "group_right"];
    const KEYWORDS: &[&str] = &["and", "or", "unless", "bool", "offset", "atan2"];
    let b = expr.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    let skip_space = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    // The index after the bracket that closes the one at `i`.
    let close = |i: usize, open: u8, shut: u8| {
        let (mut depth, mut j, mut quoted) = (0, i, false);
        while j < b.len() {
            match b[j] {
                b'"' => quoted = !quoted,
                b'\\' if quoted => j += 1,
                c if c == open && !quoted => depth += 1,
                c if c == shut && !quoted => {
                    depth -= 1;
                    if depth == 0 {
                        return j + 1;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        panic!("unbalanced {} in {expr}", open as char)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'[' {
            i = close(i, b'[', b']');
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
        } else if ident(c) {
            let start = i;
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
            let word = &expr[start..i];
            let next = skip_space(i);
            if LABEL_LISTS.contains(&word) {
                if b.get(next) == Some(&b'(') {
                    i = close(next, b'(', b')');
                }
            } else if KEYWORDS.contains(&word)
                || AGGREGATIONS.split(' ').any(|a| a == word)
                || b.get(next) == Some(&b'(')
            {
                // An operator, or a function or aggregation (its arguments are read next).
            } else {
                let mut labels = Vec::new();
                if b.get(next) == Some(&b'{') {
                    let end = close(next, b'{', b'}');
                    let body = &expr[next + 1..end - 1];
                    let mut rest = body;
                    while let Some(op) = rest.find(['=', '!']) {
                        let name = rest[..op].trim().trim_start_matches(',').trim();
                        labels.push(name.to_string());
                        // Past the value: the quoted string after the operator.
                        let open = rest[op..].find('"').map(|q| op + q + 1).expect("a quoted matcher value");
                        let shut = rest[open..].find('"').map(|q| open + q + 1).expect("a closed matcher value");
                        rest = &rest[shut..];
                    }
                    i = end;
                }
                out.push((word.to_string(), labels));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every selector of `expr` names a documented metric (or a recording rule of rules.yaml) and
/// matches only labels it has, `cluster` (Prometheus') or the target labels `job` and `instance`.
fn check_selectors(what: &str, expr: &str, docs: &BTreeMap<String, BTreeSet<String>>, recorded: &BTreeSet<String>) {
    let found = selectors(expr);
    assert!(!found.is_empty(), "{what}: no metric in {expr}");
    for (name, labels) in found {
        if recorded.contains(&name) {
            continue;
        }
        let known = docs.get(&name).unwrap_or_else(|| panic!("{what}: {name} is not in docs/metrics.md ({expr})"));
        for l in labels {
            assert!(
                known.contains(&l) || ["cluster", "job", "instance"].contains(&l.as_str()),
                "{what}: {name} has no label {l:?} in docs/metrics.md (it has {known:?}): {expr}"
            );
        }
    }
}

#[test]
fn the_selector_reader_finds_metrics_and_their_labels() {
    let s = selectors(
        r#"(count by (cluster, status) (a_b{cluster=~"$c",status!="x,y=z"}) * on (cluster) group_left (url) topk by (cluster) (1, c:d:e)) or ignoring (url) time() - f > 7200 and increase(g_total[5m]) > 0"#,
    );
    assert_eq!(
        s,
        vec![
            ("a_b".to_string(), vec!["cluster".to_string(), "status".to_string()]),
            ("c:d:e".to_string(), vec![]),
            ("f".to_string(), vec![]),
            ("g_total".to_string(), vec![]),
        ]
    );
    let docs = documented_metrics();
    assert_eq!(
        docs.get("kubectl_drift_release_status").map(|l| l.iter().map(String::as_str).collect::<Vec<_>>()),
        Some(vec!["namespace", "release", "status"])
    );
    assert!(docs.contains_key("kubectl_drift_scan_errors_total"), "{docs:?}");
    assert!(docs.contains_key("kubectl_drift_watch_streams"), "{docs:?}");
}

#[ignore = "needs the local control plane"]
#[test]
fn monitoring_rules_pass_promtool_check() {
    let _c = crate::needs_cluster!("monitoring_rules_pass_promtool_check");
    let out = promtool(&["check", "rules", "rules.yaml"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("SUCCESS"), "{out}");
    // The scrape config example loads (and with it rules.yaml, from its rule_files).
    let out = promtool(&["check", "config", "scrape-config.yaml"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("SUCCESS"), "{out}");
    // promtool itself fails on a broken rule (the check above can fail).
    let broken = std::env::temp_dir().join(format!("drift-broken-rules-{}.yaml", std::process::id()));
    std::fs::write(&broken, "groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: sum by (cluster (up)\n")
        .unwrap();
    assert!(promtool(&["check", "rules", broken.to_str().unwrap()]).is_err());
    let _ = std::fs::remove_file(&broken);
}

#[ignore = "needs the local control plane"]
#[test]
fn monitoring_rules_unit_tests_pass() {
    let _c = crate::needs_cluster!("monitoring_rules_unit_tests_pass");
    let out = promtool(&["test", "rules", "rules-test.yaml"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("SUCCESS"), "{out}");

    // The unit tests cover every alert: firing (with the dashboard link and without it, when the
    // alert has one) and quiet.
    let tests = yaml("deploy/monitoring/rules-test.yaml");
    let file = yaml("deploy/monitoring/rules.yaml");
    let cases: Vec<&Value> = tests["tests"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_array().into_iter().flatten())
        .collect();
    for rule in file["groups"].as_array().unwrap().iter().flat_map(|g| g["rules"].as_array().unwrap()) {
        let Some(alert) = rule["alert"].as_str() else { continue };
        let mine: Vec<&Value> = cases.iter().copied().filter(|c| c["alertname"] == alert).collect();
        let fired: Vec<&Value> = mine.iter().flat_map(|c| c["exp_alerts"].as_array().into_iter().flatten()).collect();
        assert!(!fired.is_empty(), "no unit test shows {alert} firing");
        assert!(
            mine.iter().any(|c| c["exp_alerts"].as_array().is_none_or(Vec::is_empty)),
            "no unit test shows {alert} quiet"
        );
        if rule["annotations"]["dashboard"].is_string() {
            let with_url = fired.iter().filter(|a| a["exp_labels"]["url"].is_string()).count();
            assert!(with_url > 0, "no unit test shows {alert} with its dashboard link");
            assert!(with_url < fired.len(), "no unit test shows {alert} firing without dashboard_info");
        }
    }

    // A wrong expectation fails (the unit tests can fail): expect KubectlDriftReleaseDrifted of
    // the clean release too.
    let mut wrong = tests.clone();
    let case = wrong["tests"][0]["alert_rule_test"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| {
            c["alertname"] == "KubectlDriftReleaseDrifted" && c["exp_alerts"].as_array().is_some_and(|a| !a.is_empty())
        })
        .expect("a firing KubectlDriftReleaseDrifted case in the first test group");
    let mut extra = case["exp_alerts"][0].clone();
    extra["exp_labels"]["release"] = "db".into();
    case["exp_alerts"].as_array_mut().unwrap().push(extra);
    wrong["rule_files"] = serde_json::json!([repo("deploy/monitoring/rules.yaml")]);
    let file = std::env::temp_dir().join(format!("drift-wrong-rules-test-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_string(&wrong).unwrap()).unwrap();
    let err = promtool(&["test", "rules", file.to_str().unwrap()]).expect_err("promtool accepted a wrong expectation");
    let _ = std::fs::remove_file(&file);
    assert!(err.contains("KubectlDriftReleaseDrifted"), "{err}");
}

#[test]
fn prometheusrule_has_the_same_groups_as_rules_yaml() {
    let plain = yaml("deploy/monitoring/rules.yaml");
    let operator = yaml("deploy/monitoring/prometheusrule.yaml");
    assert_eq!(operator["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(operator["kind"], "PrometheusRule");
    assert!(operator["metadata"]["name"].is_string());
    assert!(plain["groups"].as_array().is_some_and(|g| !g.is_empty()), "{plain}");
    assert_eq!(
        operator["spec"]["groups"], plain["groups"],
        "deploy/monitoring/prometheusrule.yaml and rules.yaml must have the same groups"
    );
}

#[test]
fn monitoring_rules_use_documented_metrics() {
    let docs = documented_metrics();
    let recorded: BTreeSet<String> =
        rules().into_iter().filter(|(n, _)| !n.starts_with("KubectlDrift")).map(|(n, _)| n).collect();
    for name in &recorded {
        assert_eq!(name.split(':').count(), 3, "recording rule {name}: level:metric:operations");
    }
    let all = rules();
    assert!(all.len() >= 6, "{all:?}");
    for (name, expr) in &all {
        check_selectors(name, expr, &docs, &recorded);
    }
}

#[test]
fn servicemonitor_and_podmonitor_select_what_deploy_exposes() {
    let docs = yaml_docs("deploy/monitoring/servicemonitor.yaml");
    let service = yaml("deploy/dashboard/base/service.yaml");
    let sm = docs.iter().find(|d| d["kind"] == "ServiceMonitor").expect("a ServiceMonitor");
    assert_eq!(sm["apiVersion"], "monitoring.coreos.com/v1");
    for (k, v) in sm["spec"]["selector"]["matchLabels"].as_object().expect("matchLabels") {
        assert_eq!(&service["metadata"]["labels"][k], v, "the Service has label {k}={v}");
    }
    let ports: Vec<&Value> = service["spec"]["ports"].as_array().unwrap().iter().map(|p| &p["name"]).collect();
    for e in sm["spec"]["endpoints"].as_array().expect("endpoints") {
        assert!(ports.contains(&&e["port"]), "endpoint port {} is not a port of the Service ({ports:?})", e["port"]);
        assert_eq!(e["path"], "/metrics");
    }
    // The namespace deploy/dashboard installs into.
    let kustomization = yaml("deploy/dashboard/base/kustomization.yaml");
    assert!(
        sm["spec"]["namespaceSelector"]["matchNames"].as_array().unwrap().contains(&kustomization["namespace"]),
        "{sm}"
    );

    let pm = docs.iter().find(|d| d["kind"] == "PodMonitor").expect("a PodMonitor for the watcher");
    let deployment = yaml("deploy/deployment.yaml");
    let pod = &deployment["spec"]["template"];
    for (k, v) in pm["spec"]["selector"]["matchLabels"].as_object().expect("matchLabels") {
        assert_eq!(&pod["metadata"]["labels"][k], v, "the watcher's Pod has label {k}={v}");
    }
    let container_ports: Vec<&Value> = pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .map(|p| &p["name"])
        .collect();
    for e in pm["spec"]["podMetricsEndpoints"].as_array().expect("podMetricsEndpoints") {
        assert!(container_ports.contains(&&e["port"]), "port {} is not a port of the watcher", e["port"]);
    }
}

#[test]
fn dashboard_uses_its_datasource_variable_and_documented_metrics() {
    let d = dashboard();
    assert!(d["schemaVersion"].as_u64().is_some_and(|v| v >= 36), "schemaVersion {}", d["schemaVersion"]);
    let vars: BTreeMap<&str, &Value> = d["templating"]["list"]
        .as_array()
        .expect("template variables")
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v))
        .collect();
    assert_eq!(vars["datasource"]["type"], "datasource");
    assert_eq!(vars["datasource"]["query"], "prometheus");
    for name in ["cluster", "namespace"] {
        let v = vars.get(name).unwrap_or_else(|| panic!("no {name} variable"));
        assert_eq!(v["type"], "query", "{name}");
        assert_eq!(v["multi"], true, "{name}");
        assert_eq!(v["includeAll"], true, "{name}");
        // "All" must also match series without the label (the per-cluster Prometheus).
        assert_eq!(v["allValue"], ".*", "{name}");
        assert_eq!(v["datasource"]["uid"], "${datasource}", "{name}");
    }
    assert_eq!(vars["cluster"]["query"]["query"], "label_values(kubectl_drift_build_info, cluster)");

    // Every panel (rows aside) and every target queries ${datasource}.
    fn walk<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
        for p in v.as_array().into_iter().flatten() {
            out.push(p);
            walk(&p["panels"], out);
        }
    }
    let mut panels = Vec::new();
    walk(&d["panels"], &mut panels);
    let mut targets = 0;
    for p in panels.iter().filter(|p| p["type"] != "row") {
        let title = p["title"].as_str().unwrap_or("?");
        assert_eq!(p["datasource"]["uid"], "${datasource}", "panel {title:?}");
        assert_eq!(p["datasource"]["type"], "prometheus", "panel {title:?}");
        let ts =
            p["targets"].as_array().filter(|t| !t.is_empty()).unwrap_or_else(|| panic!("panel {title:?}: no target"));
        for t in ts {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "panel {title:?} target {}", t["refId"]);
            assert!(t["expr"].as_str().is_some_and(|e| !e.trim().is_empty()), "panel {title:?}: a target without expr");
            targets += 1;
        }
    }
    assert!(targets >= 10, "{targets} targets");

    // Only documented metrics and labels (or recording rules of rules.yaml).
    let docs = documented_metrics();
    let recorded: BTreeSet<String> =
        rules().into_iter().filter(|(n, _)| !n.starts_with("KubectlDrift")).map(|(n, _)| n).collect();
    let queries = crate::prometheus::dashboard_queries(&d);
    assert_eq!(queries.len(), targets + 2, "the walk of prometheus.rs sees every target and both variables");
    for (what, expr) in &queries {
        assert!(!expr.contains('$'), "{what}: a variable left after substitution: {expr}");
        check_selectors(what, expr, &docs, &recorded);
    }

    // The sections the fleet view needs.
    let exprs: Vec<&str> = queries.iter().map(|(_, e)| e.as_str()).collect();
    for metric in [
        "kubectl_drift_release_status",
        "kubectl_drift_release_drifted_objects",
        "kubectl_drift_orphan_objects",
        "kubectl_drift_version_rows",
        "kubectl_drift_chart_status",
        "kubectl_drift_scan_success",
        "kubectl_drift_scan_timestamp_seconds",
        "kubectl_drift_scan_duration_seconds",
    ] {
        assert!(exprs.iter().any(|e| e.contains(metric)), "no panel shows {metric}");
    }
    assert!(
        exprs.iter().any(|e| e.contains("count by (cluster, status)") && e.contains("kubectl_drift_release_status")),
        "no clusters x status panel"
    );

    // The drifted releases table links each release to its cluster's page: its query brings the
    // `url` label of kubectl_drift_dashboard_info, and a link uses it.
    let linked: Vec<&&Value> =
        panels.iter().filter(|p| p.to_string().contains("${__data.fields.url}/?tab=releases")).collect();
    assert_eq!(linked.len(), 1, "one panel links releases to their cluster's page");
    let expr = linked[0]["targets"][0]["expr"].as_str().unwrap();
    assert!(
        expr.contains("group_left (url)")
            && expr.contains("kubectl_drift_dashboard_info")
            && expr.contains("or ignoring (url)"),
        "{expr}"
    );
}

#[ignore = "needs the local control plane"]
#[test]
fn dashboard_queries_parse_as_promql() {
    let _c = crate::needs_cluster!("dashboard_queries_parse_as_promql");
    // promtool parses each expression as the expr of a recording rule.
    let queries = crate::prometheus::dashboard_queries(&dashboard());
    let group = serde_json::json!({"groups": [{"name": "dashboard", "rules": queries.iter().enumerate()
        .map(|(i, (_, e))| serde_json::json!({"record": format!("dashboard:query_{i}:test"), "expr": e}))
        .collect::<Vec<_>>()}]});
    let file = std::env::temp_dir().join(format!("drift-dashboard-queries-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_string(&group).unwrap()).unwrap();
    let res = promtool(&["check", "rules", file.to_str().unwrap()]);
    let _ = std::fs::remove_file(&file);
    let out = res.unwrap_or_else(|e| panic!("{e}\nqueries: {queries:#?}"));
    assert!(out.contains(&format!("SUCCESS: {} rules found", queries.len())), "{out}");
}

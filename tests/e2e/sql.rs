//! Helm's SQL storage driver against the test environment's PostgreSQL: real Helm writes the
//! releases (HELM_DRIVER=sql), kubectl-drift reads them with a read-only role over TLS, and every
//! command gives the same answers as with the Secret driver. Each failure is exit 2 with an error
//! that names what failed and never the password.

use serde_json::Value;

use crate::common::{Cluster, Helm, Pg, Run, fixture, pg, unique_ns};

/// `extra` put before `args`, or right after `__complete` (whose last word is being completed).
fn with_flags<'a>(extra: &[&'a str], args: &[&'a str]) -> Vec<&'a str> {
    let at = usize::from(args.first() == Some(&"__complete"));
    let mut all = args[..at].to_vec();
    all.extend_from_slice(extra);
    all.extend_from_slice(&args[at..]);
    all
}

/// `kubectl-drift ARGS` reading Helm's SQL storage through the flags, with `dsn`.
fn drift_sql(c: &Cluster, dsn: &str, args: &[&str]) -> Run {
    c.drift(&with_flags(&["--helm-driver", "sql", "--helm-sql-connection", dsn], args))
}

/// The same answer for two namespaces: `other` renamed to `ns`, times and ages left out.
fn normalised(text: &str, other: &str, ns: &str) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in ["time", "age", "ageSeconds", "created"] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = crate::common::report_of(&text.replace(other, ns));
    strip(&mut v);
    v
}

/// Orphans items of a namespace (kind, name, class, reasons, Helm release), without Helm's own
/// storage Secrets (which only the Secret driver has) and the users (pod names are random).
fn orphan_items(v: &Value) -> Vec<Value> {
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| !i["name"].as_str().unwrap_or("").starts_with("sh.helm.release.v1."))
        .map(|i| {
            serde_json::json!({"kind": i["kind"], "name": i["name"], "class": i["class"],
                               "reasons": generated_names_masked(&i["reasons"]), "helmRelease": i["helmRelease"]})
        })
        .collect()
}

/// Reasons with the random suffix of the names the API server generates (the EndpointSlices of
/// a Service whose pods run, `NAME-x7k2p`) masked: the two namespaces' slices differ only there.
fn generated_names_masked(reasons: &Value) -> Value {
    let mask = |r: &str| {
        r.split(' ')
            .map(|word| match word.rsplit_once('-') {
                Some((base, sfx)) if sfx.len() == 5 && sfx.bytes().all(|b| b.is_ascii_alphanumeric()) => {
                    format!("{base}-XXXXX")
                }
                _ => word.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    match reasons.as_array() {
        Some(a) => a.iter().map(|r| Value::from(r.as_str().map(mask).unwrap_or_default())).collect(),
        None => reasons.clone(),
    }
}

fn assert_no_password(run: &Run, password: &str) {
    assert!(
        !run.stdout().contains(password) && !run.stderr().contains(password),
        "the password leaked:\nstdout: {}\nstderr: {}",
        run.stdout(),
        run.stderr()
    );
}

/// The same chart installed by Helm 4 twice, once per driver, drifted the same way: release,
/// --all, watch --once, completion and orphans' Helm evidence answer alike.
#[ignore = "needs the local control plane"]
#[test]
fn sql_driver_answers_like_the_secret_driver() {
    let c = crate::needs_cluster!("sql_driver_answers_like_the_secret_driver");
    let pg = pg();
    let secret_ns = unique_ns("sql-same-secret");
    let sql_ns = unique_ns("sql-same-sql");
    let chart = fixture("charts/shop");
    let chart = chart.to_str().unwrap();
    let helm_sql = [("HELM_DRIVER", "sql"), ("HELM_DRIVER_SQL_CONNECTION_STRING", pg.helm_dsn.as_str())];
    for (ns, env) in [(&secret_ns, &[][..]), (&sql_ns, &helm_sql[..])] {
        c.create_namespace(ns);
        c.helm_with_env(Helm::V4, &["install", "shop", chart, "-n", ns], env).ok();
        // Under load the HPA may already own the worker's replicas: take them back, as a real
        // upgrade under server-side apply would have to (the HPA scales it again below).
        c.helm_with_env(
            Helm::V4,
            &["upgrade", "shop", chart, "-n", ns, "--set", "logLevel=debug", "--force-conflicts"],
            env,
        )
        .ok();
        // Something Helm would recreate, kept apart from the chart: managed while installed.
        c.kubectl_stdin(
            &["apply", "-f", "-"],
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-extra\n  namespace: {ns}\n  annotations:\n    meta.helm.sh/release-name: shop\n    meta.helm.sh/release-namespace: {ns}\ndata:\n  a: b\n"
            ),
        )
        .ok();
    }
    // The HPA raises the worker to minReplicas (2), reported as ignored: wait for it in both.
    for ns in [&secret_ns, &sql_ns] {
        crate::release::wait_until("the HPA to scale the worker", std::time::Duration::from_secs(90), || {
            c.kubectl(&["-n", ns, "get", "deploy", "shop-worker", "-o", "jsonpath={.spec.replicas}"]).ok() == "2"
        });
    }
    let secret = |args: &[&str]| c.drift(&with_flags(&["-n", &secret_ns], args));
    let sql = |args: &[&str]| drift_sql(&c, &pg.readonly_dsn, &with_flags(&["-n", &sql_ns], args));
    let same = |args: &[&str], code: i32| {
        let (a, b) = (secret(args), sql(args));
        assert_eq!(
            (a.code(), b.code()),
            (code, code),
            "{args:?}\nsecret: {}{}\nsql: {}{}",
            a.stdout(),
            a.stderr(),
            b.stdout(),
            b.stderr()
        );
        assert_no_password(&b, &Pg::password(&pg.readonly_dsn));
        (a, b)
    };

    // The extra object carries the release's annotations: both report it, then the same hand edit.
    let (a, b) = same(&["release", "shop", "-o", "json"], 1);
    assert_eq!(normalised(&a.stdout(), &secret_ns, "NS"), normalised(&b.stdout(), &sql_ns, "NS"));
    assert!(b.stdout().contains("\"name\": \"shop-extra\""), "{}", b.stdout());
    for ns in [&secret_ns, &sql_ns] {
        c.kubectl(&["-n", ns, "set", "env", "deployment/shop-web", "EXTRA=1"]).ok();
    }
    let (a, b) = same(&["release", "shop", "-o", "json"], 1);
    let sql_report = normalised(&b.stdout(), &sql_ns, "NS");
    assert_eq!(normalised(&a.stdout(), &secret_ns, "NS"), sql_report);
    assert_eq!(sql_report["releases"][0]["revision"], 2);
    assert!(b.stdout().contains("env[name=EXTRA]"), "{}", b.stdout());
    let (a, b) = same(&["release", "--all", "-o", "json"], 1);
    assert_eq!(normalised(&a.stdout(), &secret_ns, "NS"), normalised(&b.stdout(), &sql_ns, "NS"));
    let (a, b) = same(&["release", "shop", "--revision", "1", "-q"], 1);
    assert_eq!(a.stdout().replace(&secret_ns, "NS"), b.stdout().replace(&sql_ns, "NS"));

    // watch --once: the same round.
    let (a, b) = same(&["watch", "--all", "--once"], 1);
    assert!(b.stderr().contains("round finished duration_ms="), "{}", b.stderr());
    assert!(b.stderr().contains(" targets=1 drifted=1 errors=0 "), "{}", b.stderr());
    // The round's counts and outcome (its last line; the timestamp and duration differ).
    let round = |r: &Run| r.stderr().lines().last().and_then(|l| l.split_once(" targets=")).map(|(_, c)| c.to_string());
    assert_eq!(round(&a), round(&b));

    // Completion of release names, from the same entry point kubectl uses.
    let (a, b) = same(&["__complete", "release", ""], 0);
    assert_eq!(a.stdout(), b.stdout());
    assert!(b.stdout().starts_with("shop\trevision 2 deployed\n"), "{}", b.stdout());
    // ... and under Helm, where the driver comes from the environment Helm passes.
    let under_helm = c.drift_with_env(
        &["__complete", "release", ""],
        &[
            ("HELM_PLUGIN_NAME", "drift"),
            ("HELM_NAMESPACE", sql_ns.as_str()),
            ("HELM_DRIVER", "sql"),
            ("HELM_DRIVER_SQL_CONNECTION_STRING", pg.readonly_dsn.as_str()),
        ],
    );
    assert_eq!(under_helm.stdout(), b.stdout());

    // Orphans' Helm evidence: the extra ConfigMap is managed by the installed release...
    let orphans = ["orphans", "--older-than", "0s", "--show", "all", "-o", "json"];
    let (a, b) = same(&orphans, 0);
    let sql_items = orphan_items(&normalised(&b.stdout(), &sql_ns, "NS"));
    assert_eq!(orphan_items(&normalised(&a.stdout(), &secret_ns, "NS")), sql_items);
    let extra = sql_items.iter().find(|i| i["name"] == "shop-extra").expect("shop-extra examined");
    assert!(extra.to_string().contains("installed Helm release NS/shop"), "{extra}");
    // ... and a leftover once the release is uninstalled (history kept: status uninstalled).
    c.helm(Helm::V4, &["uninstall", "shop", "-n", &secret_ns, "--keep-history"]).ok();
    c.helm_with_env(Helm::V4, &["uninstall", "shop", "-n", &sql_ns, "--keep-history"], &helm_sql).ok();
    let (a, b) = same(&orphans, 1);
    let sql_items = orphan_items(&normalised(&b.stdout(), &sql_ns, "NS"));
    assert_eq!(orphan_items(&normalised(&a.stdout(), &secret_ns, "NS")), sql_items);
    let extra = sql_items.iter().find(|i| i["name"] == "shop-extra").expect("shop-extra examined");
    assert!(extra.to_string().contains("leftover of Helm release NS/shop"), "{extra}");
    // Nothing is left to check: `--all` leaves out releases uninstalled with their history kept.
    let (_, b) = same(&["release", "--all", "-q"], 0);
    assert!(b.stdout().contains("no Helm releases found"), "{}", b.stdout());

    for ns in [&secret_ns, &sql_ns] {
        c.kubectl(&["delete", "namespace", ns, "--wait=false"]).ok();
    }
}

/// Insert a row as Helm's own role (the read-only role cannot), over TLS like Helm.
fn insert_row(pg: &Pg, ns: &str, name: &str, body: &str) {
    let rt = crate::common::runtime();
    rt.block_on(async {
        let dsn = format!("{}?sslmode=disable", pg.helm_dsn);
        let (client, conn) = tokio_postgres::connect(&dsn, tokio_postgres::NoTls).await.expect("connect as helm");
        tokio::spawn(conn);
        client
            .execute(
                "INSERT INTO releases_v1 (key, type, body, name, namespace, version, status, owner, createdat, modifiedat) \
                 VALUES ($1, 'helm.sh/release.v1', $2, $3, $4, 1, 'deployed', 'helm', 0, 0)",
                &[&format!("sh.helm.release.v1.{name}.v1"), &body, &name, &ns],
            )
            .await
            .expect("insert a release row");
    });
}

/// Every failure is exit 2 with an error naming what failed, and the password nowhere.
#[ignore = "needs the local control plane"]
#[test]
fn sql_driver_errors_name_the_failure_not_the_password() {
    let c = crate::needs_cluster!("sql_driver_errors_name_the_failure_not_the_password");
    let pg = pg();
    let ns = unique_ns("sql-errors");
    c.create_namespace(&ns);
    let chart = fixture("charts/note");
    let helm_sql = [("HELM_DRIVER", "sql"), ("HELM_DRIVER_SQL_CONNECTION_STRING", pg.helm_dsn.as_str())];
    c.helm_with_env(Helm::V3, &["install", "good", chart.to_str().unwrap(), "-n", &ns], &helm_sql).ok();
    let password = Pg::password(&pg.readonly_dsn);
    // The read-only connection string with one part changed.
    let with_password = |from: &str, to: &str| pg.readonly_dsn.replacen(from, to, 1);

    // A row whose body does not decode: named, exit 2, the good release still reported.
    insert_row(&pg, &ns, "broken", "H4sI%%%not-base64");
    let run = drift_sql(&c, &pg.readonly_dsn, &["release", "--all", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 2, "{}{}", run.stdout(), run.stderr());
    assert!(run.stderr().contains(&format!("releases_v1 row {ns}/sh.helm.release.v1.broken.v1")), "{}", run.stderr());
    let report = run.report();
    let statuses: Vec<(&str, &str)> = report["releases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert!(statuses.contains(&("good", "clean")) && statuses.contains(&("broken", "error")), "{statuses:?}");
    assert_no_password(&run, &password);

    // The environment works as well as the flags; the password stays out of the output too.
    let run = c.drift_with_env(
        &["release", "good", "-n", &ns, "-q"],
        &[("HELM_DRIVER", "sql"), ("HELM_DRIVER_SQL_CONNECTION_STRING", &with_password("@", "x@"))],
    );
    assert_eq!(run.code(), 2, "{}{}", run.stdout(), run.stderr());
    assert!(run.stderr().contains("authentication failed for user \"drift_ro\""), "{}", run.stderr());
    assert_no_password(&run, &password);

    let port = crate::common::free_port();
    let wrong_roots = pg.ca.with_file_name("apiserver.crt");
    let cases: Vec<(String, &str)> = vec![
        // Bad connection string (the password is in it, next to a bad port).
        (
            format!("postgres://drift_ro:{password}@127.0.0.1:99999/helm"),
            "Helm SQL storage: invalid PostgreSQL connection string",
        ),
        (format!("{}?sslmode=sometimes", pg.readonly_dsn), "sslmode must be"),
        (format!("user=drift_ro password={password} host=127.0.0.1 sslcert=/x"), "sslcert is not supported"),
        // Refused connection (a port nothing listens on).
        (format!("postgres://drift_ro:{password}@127.0.0.1:{port}/helm"), "Connection refused"),
        // Authentication failure.
        (with_password("@", "wrong@"), "password authentication failed"),
        // Without TLS the server refuses drift_ro: the default (require) is what makes it work.
        (format!("{}?sslmode=disable", pg.readonly_dsn), "no encryption"),
        // TLS verification against the wrong roots (require with a root file verifies, like lib/pq).
        (format!("{}?sslmode=verify-full&sslrootcert={}", pg.readonly_dsn, wrong_roots.display()), "TLS failed"),
        (format!("{}?sslmode=verify-ca&sslrootcert={}", pg.readonly_dsn, wrong_roots.display()), "TLS failed"),
        (format!("{}?sslrootcert={}", pg.readonly_dsn, wrong_roots.display()), "TLS failed"),
        // A database without Helm's tables.
        (with_password("/helm", "/drift_empty"), "table releases_v1 does not exist"),
        // A role that Helm's row-level security hides every row from.
        (pg.norls_dsn.clone(), "row-level security on releases_v1"),
    ];
    for (dsn, wanted) in &cases {
        for args in [&["release", "good", "-n", &ns][..], &["release", "--all", "-n", &ns, "-o", "json"][..]] {
            let run = drift_sql(&c, dsn, args);
            assert_eq!(run.code(), 2, "{wanted}: {}{}", run.stdout(), run.stderr());
            assert!(run.stderr().contains(wanted), "wanted {wanted:?} in: {}", run.stderr());
            assert!(!run.stderr().contains("panicked"), "{}", run.stderr());
            assert_no_password(&run, &password);
        }
    }
    // The same errors stop orphans (installed releases would be unknown) and watch --once.
    let run = drift_sql(&c, &with_password("/helm", "/drift_empty"), &["orphans", "-n", &ns]);
    assert_eq!(run.code(), 2, "{}{}", run.stdout(), run.stderr());
    assert!(run.stderr().contains("table releases_v1 does not exist"), "{}", run.stderr());
    let run = drift_sql(&c, &with_password("@", "wrong@"), &["watch", "--all", "-n", &ns, "--once"]);
    assert_eq!(run.code(), 2, "{}{}", run.stdout(), run.stderr());
    assert_no_password(&run, &password);
    // With the right CA every verifying mode works (the server certificate is for 127.0.0.1).
    for mode in ["verify-full", "verify-ca", "require"] {
        let verified = format!("{}?sslmode={mode}&sslrootcert={}", pg.readonly_dsn, pg.ca.display());
        let run = drift_sql(&c, &verified, &["release", "good", "-n", &ns, "-q"]);
        assert_eq!(run.code(), 0, "{mode}: {}{}", run.stdout(), run.stderr());
    }
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

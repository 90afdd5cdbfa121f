//! The CI formats on the real control plane (issue 30): one run writes text on stdout and JUnit,
//! SARIF and GitHub annotations to files (`--output-file`); each file is read back by a real
//! consumer: xmllint against our JUnit XSD subset, python junitparser, python jsonschema against
//! the OASIS SARIF 2.1.0 schema (from the npm package scripts/test-env takes it from), and a
//! parser of GitHub's workflow-command escaping. Lines in SARIF and annotations are checked
//! against the files. Drifted, clean, error, extra and two-cluster runs; secrets never appear.
//!
//! The checkers come from `scripts/test-env build` (its export lines name them); a test fails
//! when one is missing, it never skips.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Cluster, unique_ns};

/// A checker named by the test environment's export lines.
fn tool(var: &str) -> PathBuf {
    let v = std::env::var(var).unwrap_or_default();
    assert!(!v.is_empty(), "{var} is not set: run scripts/test-env build, then eval \"$(scripts/test-env up)\"");
    PathBuf::from(v)
}

fn fixture_ci(name: &str) -> String {
    crate::common::fixture(&format!("ci/{name}")).display().to_string()
}

fn check(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("failed to run {cmd:?}: {e}"));
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed:\n{all}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Validate a JUnit file with xmllint against our XSD, then read it with junitparser.
fn junit(path: &Path) -> Value {
    check(Command::new(tool("DRIFT_XMLLINT")).args(["--noout", "--schema", &fixture_ci("junit.xsd")]).arg(path));
    let out = check(Command::new(tool("DRIFT_CI_PYTHON")).arg(fixture_ci("read_junit.py")).arg(path));
    serde_json::from_str(&out).unwrap()
}

/// Validate a SARIF file against the OASIS schema with jsonschema, then parse it.
fn sarif(path: &Path) -> Value {
    let schema = tool("DRIFT_SARIF_SCHEMA");
    check(Command::new(tool("DRIFT_CI_PYTHON")).arg(fixture_ci("check_sarif.py")).arg(&schema).arg(path));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A GitHub workflow command as the runner reads it.
struct Annotation {
    level: String,
    props: Vec<(String, String)>,
    message: String,
}

impl Annotation {
    fn prop(&self, key: &str) -> Option<&str> {
        self.props.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

fn unescape(s: &str) -> String {
    s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")
}

/// Every line of `text` must be one command (a value's newline never makes a line of its own).
fn annotations(text: &str) -> Vec<Annotation> {
    text.lines()
        .map(|line| {
            let rest = line.strip_prefix("::").unwrap_or_else(|| panic!("not a workflow command: {line:?}"));
            let (head, message) = rest.split_once("::").unwrap();
            let (level, props) = head.split_once(' ').unwrap_or((head, ""));
            let props = props
                .split(',')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap();
                    (k.to_string(), unescape(v))
                })
                .collect();
            Annotation { level: level.to_string(), props, message: unescape(message) }
        })
        .collect()
}

fn cases<'a>(report: &'a Value, suite: &str) -> &'a Vec<Value> {
    report["suites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == suite)
        .unwrap_or_else(|| panic!("no suite {suite} in {report:#}"))["cases"]
        .as_array()
        .unwrap()
}

fn case<'a>(report: &'a Value, suite: &str, name: &str) -> &'a Value {
    cases(report, suite)
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name} in {suite}: {report:#}"))
}

/// The document of `file` starting at 1-based `line`: its lines up to the next `---`.
fn document_at(dir: &Path, file: &str, line: usize) -> String {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    text.lines().skip(line - 1).take_while(|l| !l.starts_with("---")).collect::<Vec<_>>().join("\n")
}

const SECRET_PLAIN: &str = "s3cr3t-original";
const SECRET_NEW: &str = "changed-by-hand-s3cr3t";

fn assert_no_secret(what: &str, text: &str) {
    use base64::Engine as _;
    for s in [SECRET_PLAIN, SECRET_NEW] {
        let b64 = base64::engine::general_purpose::STANDARD.encode(s);
        assert!(!text.contains(s) && !text.contains(&b64), "{what} shows a secret value {s}:\n{text}");
    }
}

/// A folder of manifests: `app.yaml` (comments, then three documents), `secret.yaml`,
/// `clean.yaml`, and `bad.yaml` that is not YAML. Every object is labelled `ci=NS`.
fn write_folder(dir: &Path, ns: &str) {
    std::fs::create_dir_all(dir.join("k8s")).unwrap();
    let app = format!(
        "# The app's settings.\n# Three documents.\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n  namespace: {ns}\n  labels: {{ci: {ns}}}\ndata:\n  motd: hello\n---\n\n# the worker's\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: worker-config\n  namespace: {ns}\n  labels: {{ci: {ns}}}\ndata:\n  mode: steady\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: worker\n  namespace: {ns}\n  labels: {{ci: {ns}}}\n"
    );
    std::fs::write(dir.join("k8s/app.yaml"), app).unwrap();
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: {ns}\n  labels: {{ci: {ns}}}\nstringData:\n  password: {SECRET_PLAIN}\n"
    );
    std::fs::write(dir.join("k8s/secret.yaml"), secret).unwrap();
    let clean = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: steady\n  namespace: {ns}\n  labels: {{ci: {ns}}}\ndata:\n  a: b\n"
    );
    std::fs::write(dir.join("k8s/clean.yaml"), clean).unwrap();
}

/// Drifted, clean, error (a file that is not YAML) and extra (a labelled object in no file) in
/// one `manifests` run: text on stdout, JUnit, SARIF and annotations in files; each read back;
/// lines point at the objects' documents; the Secret's values never appear.
#[ignore = "needs the local control plane"]
#[test]
fn ci_formats_manifests_in_one_run_read_back_by_real_consumers() {
    let c = crate::needs_cluster!("ci_formats_manifests_in_one_run_read_back_by_real_consumers");
    let ns = unique_ns("ci-mf");
    c.create_namespace(&ns);
    let dir = c.scratch.join("repo");
    write_folder(&dir, &ns);
    c.kubectl(&["apply", "-f", dir.join("k8s").to_str().unwrap()]).ok();
    std::fs::write(dir.join("k8s/bad.yaml"), "apiVersion: v1\nkind: [unclosed\n").unwrap();
    // By hand: a hostile value, a changed Secret, a deleted object, an extra labelled object.
    let hostile = "line1\nline2 100% :: <tag a=\"v\">&amp;";
    let patch = serde_json::json!({"data": {"motd": hostile}}).to_string();
    c.kubectl(&["-n", &ns, "patch", "configmap", "web-config", "-p", &patch]).ok();
    let secret_patch = serde_json::json!({"stringData": {"password": SECRET_NEW}}).to_string();
    c.kubectl(&["-n", &ns, "patch", "secret", "db", "-p", &secret_patch]).ok();
    c.kubectl(&["-n", &ns, "delete", "serviceaccount", "worker"]).ok();
    c.kubectl(&["-n", &ns, "create", "configmap", "stray", "--from-literal=x=y"]).ok();
    c.kubectl(&["-n", &ns, "label", "configmap", "stray", &format!("ci={ns}")]).ok();

    let out = c.scratch.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (j, s, g) = (out.join("drift.xml"), out.join("drift.sarif"), out.join("drift.github"));
    let selector = format!("ci={ns}");
    let args = [
        "manifests",
        "k8s",
        "-n",
        &ns,
        "--selector",
        &selector,
        "--output-file",
        &format!("junit={}", j.display()),
        "--output-file",
        &format!("sarif={}", s.display()),
        "--output-file",
        &format!("github={}", g.display()),
    ];
    let run = crate::manifests::run_in(&c, Path::new(env!("CARGO_BIN_EXE_kubectl-drift")), &dir, &args, &[]);
    // bad.yaml could not be checked: exit 2, and the text report on stdout.
    assert_eq!(run.code(), 2, "{}\n{}", run.stdout(), run.stderr());
    assert!(run.stdout().contains("web-config") && run.stdout().contains("files"), "{}", run.stdout());

    let xml = std::fs::read_to_string(&j).unwrap();
    let sarif_text = std::fs::read_to_string(&s).unwrap();
    let github_text = std::fs::read_to_string(&g).unwrap();
    for (what, text) in [
        ("stdout", run.stdout()),
        ("junit", xml.clone()),
        ("sarif", sarif_text.clone()),
        ("github", github_text.clone()),
    ] {
        assert_no_secret(what, &text);
    }

    // JUnit: a suite per file and one for the extra search; a case per object.
    let report = junit(&j);
    let web = case(&report, "file k8s/app.yaml", &format!("ConfigMap {ns}/web-config"));
    assert_eq!(web["result"], "failure", "{web:#}");
    assert_eq!(web["message"], "changed: data.motd");
    assert_eq!(case(&report, "file k8s/app.yaml", &format!("ServiceAccount {ns}/worker"))["result"], "failure");
    assert_eq!(case(&report, "file k8s/secret.yaml", &format!("Secret {ns}/db"))["message"], "changed: data.password");
    assert_eq!(case(&report, "file k8s/clean.yaml", "file k8s/clean.yaml")["result"], "passed");
    assert_eq!(case(&report, "file k8s/bad.yaml", "file k8s/bad.yaml")["result"], "error");
    let extra = format!("extra objects (ci={ns})");
    assert_eq!(case(&report, &extra, &format!("ConfigMap {ns}/stray"))["result"], "failure");
    assert!(xml.contains("line2 100% :: &lt;tag a=&quot;v&quot;&gt;&amp;amp;"), "{xml}");

    // SARIF: valid; each object's result at its file and the line its document starts on.
    let log = sarif(&s);
    let results = log["runs"][0]["results"].as_array().unwrap();
    let at = |rule: &str, name: &str| -> (String, Option<usize>) {
        let r = results
            .iter()
            .find(|r| r["ruleId"] == rule && r["message"]["text"].as_str().unwrap().contains(name))
            .unwrap_or_else(|| panic!("no {rule} result for {name}: {sarif_text}"));
        let p = &r["locations"][0]["physicalLocation"];
        (
            p["artifactLocation"]["uri"].as_str().unwrap_or("-").to_string(),
            p["region"]["startLine"].as_u64().map(|l| l as usize),
        )
    };
    assert_eq!(at("drift/changed", "web-config"), ("k8s/app.yaml".into(), Some(4)));
    assert!(document_at(&dir, "k8s/app.yaml", 4).contains("name: web-config"));
    let (file, line) = at("drift/missing", "ServiceAccount");
    assert_eq!(file, "k8s/app.yaml");
    assert!(document_at(&dir, "k8s/app.yaml", line.unwrap()).contains("kind: ServiceAccount"), "line {line:?}");
    assert_eq!(at("drift/changed", "Secret"), ("k8s/secret.yaml".into(), Some(1)));
    assert_eq!(at("drift/error", "bad.yaml"), ("k8s/bad.yaml".into(), None));
    assert_eq!(at("drift/extra", "stray"), ("-".into(), None));
    assert!(results.iter().all(|r| r["partialFingerprints"]["driftFinding/v1"].is_string()));

    // Annotations: the same places; the hostile value comes back whole.
    let notes = annotations(&github_text);
    let web = notes.iter().find(|a| a.prop("title").is_some_and(|t| t.contains("web-config"))).unwrap();
    assert_eq!((web.level.as_str(), web.prop("file"), web.prop("line")), ("error", Some("k8s/app.yaml"), Some("4")));
    assert!(web.message.contains(&format!("data.motd: hello -> {hostile}")), "{}", web.message);
    let stray = notes.iter().find(|a| a.prop("title").is_some_and(|t| t.contains("stray"))).unwrap();
    assert_eq!((stray.level.as_str(), stray.prop("file")), ("warning", None));

    // A rerun gives the same fingerprints (GitHub keeps the same alerts).
    let again = c.scratch.join("again.sarif");
    let rerun = crate::manifests::run_in(
        &c,
        Path::new(env!("CARGO_BIN_EXE_kubectl-drift")),
        &dir,
        &[
            "manifests",
            "k8s",
            "-n",
            &ns,
            "--selector",
            &selector,
            "-o",
            "sarif",
            "--output-file",
            &format!("sarif={}", again.display()),
        ],
        &[],
    );
    assert_eq!(rerun.code(), 2);
    assert_eq!(rerun.stdout(), std::fs::read_to_string(&again).unwrap(), "stdout and file hold the same SARIF");
    let prints = |v: &Value| -> Vec<Value> {
        v["runs"][0]["results"].as_array().unwrap().iter().map(|r| r["partialFingerprints"].clone()).collect()
    };
    assert_eq!(prints(&sarif(&again)), prints(&log));

    // Clean: exit 0, every case passes, no annotation.
    let clean_xml = c.scratch.join("clean.xml");
    let run = crate::manifests::run_in(
        &c,
        Path::new(env!("CARGO_BIN_EXE_kubectl-drift")),
        &dir,
        &[
            "manifests",
            "k8s/clean.yaml",
            "-n",
            &ns,
            "-o",
            "github",
            "--output-file",
            &format!("junit={}", clean_xml.display()),
        ],
        &[],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert_eq!(run.stdout(), "");
    let clean = junit(&clean_xml);
    assert_eq!(
        (clean["tests"].as_u64(), clean["failures"].as_u64(), clean["errors"].as_u64()),
        (Some(1), Some(0), Some(0))
    );
}

/// A release (no file): SARIF with logical locations, JUnit with one suite per release, and an
/// unwritable `--output-file` is an error naming the file.
#[ignore = "needs the local control plane"]
#[test]
fn ci_formats_release_logical_locations_and_junit() {
    let c = crate::needs_cluster!("ci_formats_release_logical_locations_and_junit");
    let ns = unique_ns("ci-rel");
    c.create_namespace(&ns);
    let chart = c.one_template_chart(
        "ci",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: steady\n",
    );
    c.helm(crate::common::Helm::V4, &["install", "ci", chart.to_str().unwrap(), "-n", &ns]).ok();
    c.kubectl(&["-n", &ns, "patch", "configmap", "settings", "-p", r#"{"data":{"mode":"by-hand"}}"#]).ok();
    let j = c.scratch.join("release.xml");
    let run = c.drift(&["release", "ci", "-n", &ns, "-o", "sarif", "--output-file", &format!("junit={}", j.display())]);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    let sarif_file = c.scratch.join("release.sarif");
    std::fs::write(&sarif_file, run.stdout()).unwrap();
    let log = sarif(&sarif_file);
    let r = &log["runs"][0]["results"][0];
    assert_eq!(r["ruleId"], "drift/changed");
    let names: Vec<&str> = r["locations"][0]["logicalLocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["fullyQualifiedName"].as_str().unwrap())
        .collect();
    let cluster = names[0];
    assert_eq!(
        names[1..],
        [
            format!("{cluster}/{ns}"),
            format!("{cluster}/{ns}/release:ci"),
            format!("{cluster}/{ns}/release:ci/ConfigMap/{ns}/settings"),
            format!("{cluster}/{ns}/release:ci/ConfigMap/{ns}/settings/data.mode"),
        ]
    );
    let report = junit(&j);
    let settings = case(&report, &format!("release {ns}/ci"), &format!("ConfigMap {ns}/settings"));
    assert_eq!(
        (settings["result"].as_str(), settings["message"].as_str()),
        (Some("failure"), Some("changed: data.mode"))
    );

    let run = c.drift(&["release", "ci", "-n", &ns, "--output-file", "junit=/nonexistent/dir/x.xml"]);
    assert_eq!(run.code(), 2);
    assert!(run.stderr().contains("failed to write --output-file /nonexistent/dir/x.xml"), "{}", run.stderr());
    let run = c.drift(&["release", "ci", "-n", &ns, "--output-file", "xml=x"]);
    assert_eq!(run.code(), 2);
    assert!(run.stderr().contains("unknown format \"xml\""), "{}", run.stderr());
}

/// Two clusters: the release drifted in the second only; each suite names its cluster, and a
/// cluster that cannot be read is a suite with an error.
#[ignore = "needs the local control plane"]
#[test]
fn ci_formats_two_clusters_name_the_cluster() {
    let c = crate::needs_cluster!("ci_formats_two_clusters_name_the_cluster");
    let (kubeconfig, contexts, ns) = crate::fleet::drifted_in_the_second(&c, "ci-fleet", r#"{"data":{"mode":"hand"}}"#);
    let troubled = crate::fleet::troubled_kubeconfig(&c, &kubeconfig, &contexts);
    let j = c.scratch.join("fleet.xml");
    let s = c.scratch.join("fleet.sarif");
    let three = format!("{},{},down", contexts[0], contexts[1]);
    let run = c.drift_with_env(
        &[
            "release",
            "app",
            "-n",
            &ns,
            "--context",
            &three,
            "-o",
            "github",
            "--output-file",
            &format!("junit={}", j.display()),
            "--output-file",
            &format!("sarif={}", s.display()),
        ],
        &[("KUBECONFIG", troubled.to_str().unwrap())],
    );
    assert_eq!(run.code(), 2, "{}", run.stderr());
    let report = junit(&j);
    let names: Vec<&str> = report["suites"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            format!("{}: release {ns}/app", contexts[0]),
            format!("{}: release {ns}/app", contexts[1]),
            "cluster down".to_string(),
        ]
    );
    assert_eq!(case(&report, names[0], names[0])["result"], "passed");
    assert_eq!(case(&report, names[1], &format!("ConfigMap {ns}/app-settings"))["result"], "failure");
    assert_eq!(cases(&report, "cluster down")[0]["result"], "error");
    let notes = annotations(&run.stdout());
    assert_eq!(notes.len(), 2, "{}", run.stdout());
    assert!(notes[0].prop("title").unwrap().ends_with(&format!("({}: release {ns}/app)", contexts[1])));
    assert_eq!(notes[1].prop("title"), Some("drift: cluster down could not be read"));
    // SARIF: the drift of the second cluster, then the unreadable cluster; each names its cluster.
    let log = sarif(&s);
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{log:#}");
    assert!(
        results[0]["message"]["text"].as_str().unwrap().starts_with(&format!("cluster {}: ConfigMap", contexts[1]))
    );
    assert_eq!(results[0]["locations"][0]["logicalLocations"][0]["name"], contexts[1].as_str());
    assert_eq!(results[1]["ruleId"], "drift/error");
    assert_eq!(results[1]["locations"][0]["logicalLocations"][0]["name"], "down");
    crate::fleet::cleanup(&c, &kubeconfig, &contexts[..2], &ns);
}

/// `orphans -o junit`: a suite per examined kind, the orphan a failure.
#[ignore = "needs the local control plane"]
#[test]
fn ci_formats_orphans_junit() {
    let c = crate::needs_cluster!("ci_formats_orphans_junit");
    let ns = unique_ns("ci-orph");
    c.create_namespace(&ns);
    c.kubectl(&["-n", &ns, "create", "configmap", "left-behind", "--from-literal=a=b"]).ok();
    let j = c.scratch.join("orphans.xml");
    let run =
        c.drift(&["orphans", "-n", &ns, "--older-than", "0s", "--output-file", &format!("junit={}", j.display())]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    assert!(run.stdout().contains("left-behind"), "the table on stdout: {}", run.stdout());
    let report = junit(&j);
    let orphan = case(&report, "orphans ConfigMap", &format!("ConfigMap {ns}/left-behind"));
    assert_eq!(orphan["result"], "failure", "{report:#}");
}

/// The GitHub Action and the sample workflow lint clean with actionlint, and actionlint does
/// fail on a broken workflow (so the check can fail).
#[ignore = "needs actionlint from scripts/test-env build"]
#[test]
fn ci_formats_action_and_sample_workflow_lint_clean() {
    let actionlint = tool("DRIFT_ACTIONLINT");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workflow = root.join("docs/examples/github-workflow.yaml");
    let out = Command::new(&actionlint).arg("-no-color").arg(&workflow).current_dir(root).output().unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // action.yml: actionlint checks the action's metadata when a workflow uses it locally.
    let scratch = std::env::temp_dir().join(format!("drift-actionlint-{}", std::process::id()));
    let wf = scratch.join(".github/workflows");
    std::fs::create_dir_all(&wf).unwrap();
    // actionlint finds the workflows from the repository's root.
    check(Command::new("git").args(["init", "-q"]).current_dir(&scratch));
    let action_dir = scratch.join("action");
    std::fs::create_dir_all(&action_dir).unwrap();
    std::fs::copy(root.join("action.yml"), action_dir.join("action.yml")).unwrap();
    let uses = "on: push\njobs:\n  drift:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - uses: ./action\n        with:\n          version: v0.1.0\n          paths: k8s/\n";
    std::fs::write(wf.join("uses.yaml"), uses).unwrap();
    let lint = |dir: &Path| Command::new(&actionlint).arg("-no-color").current_dir(dir).output().unwrap();
    let out = lint(&scratch);
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // An input the action does not have: actionlint must object.
    std::fs::write(wf.join("uses.yaml"), uses.replace("paths:", "no-such-input:")).unwrap();
    let out = lint(&scratch);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success() && text.contains("no-such-input"), "{text}");
    let _ = std::fs::remove_dir_all(&scratch);
}

/// The action's `run:` steps as GitHub runs them (`bash --noprofile --norc -eo pipefail`), their
/// `${{ inputs.X }}` and `${{ steps.check.outputs.X }}` filled in as GitHub would, the runner's
/// variables and files (`RUNNER_TEMP`, `GITHUB_PATH`, `GITHUB_OUTPUT`) made here.
struct ActionRun {
    steps: Vec<Value>,
    defaults: Vec<(String, String)>,
    runner_temp: PathBuf,
    github_path: PathBuf,
    github_output: PathBuf,
}

impl ActionRun {
    fn new(scratch: &Path) -> ActionRun {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml")).unwrap();
        let action: Value = serde_saphyr::from_str(&text).expect("action.yml is YAML");
        let defaults = action["inputs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v["default"].as_str().unwrap_or_default().to_string()))
            .collect();
        let runner_temp = scratch.join("runner-temp");
        std::fs::create_dir_all(&runner_temp).unwrap();
        ActionRun {
            steps: action["runs"]["steps"].as_array().unwrap().clone(),
            defaults,
            github_path: scratch.join("github-path"),
            github_output: scratch.join("github-output"),
            runner_temp,
        }
    }

    fn outputs(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(&self.github_output)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect()
    }

    fn output(&self, key: &str) -> Option<String> {
        self.outputs().into_iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn expand(&self, value: &str, inputs: &[(&str, &str)]) -> String {
        let re = regex::Regex::new(r"\$\{\{\s*(inputs|steps\.check\.outputs)\.([a-z0-9-]+)\s*\}\}").unwrap();
        re.replace_all(value, |caps: &regex::Captures<'_>| {
            let key = &caps[2];
            if &caps[1] == "inputs" {
                inputs.iter().find(|(k, _)| *k == key).map(|(_, v)| v.to_string()).unwrap_or_else(|| {
                    self.defaults.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).expect("a declared input")
                })
            } else {
                self.output(key).unwrap_or_default()
            }
        })
        .into_owned()
    }

    /// Run the step named `name` in `cwd`.
    fn step(&self, c: &Cluster, name: &str, cwd: &Path, inputs: &[(&str, &str)]) -> crate::common::Run {
        let step = self.steps.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no step {name}"));
        let script = self.runner_temp.join("step.sh");
        std::fs::write(&script, step["run"].as_str().unwrap()).unwrap();
        let added: String =
            std::fs::read_to_string(&self.github_path).unwrap_or_default().lines().map(|l| format!("{l}:")).collect();
        let path = format!("{added}{}:{}", c.tools_bin.display(), std::env::var("PATH").unwrap_or_default());
        let mut env: Vec<(String, String)> = vec![
            ("RUNNER_OS".into(), "Linux".into()),
            ("RUNNER_ARCH".into(), "X64".into()),
            ("RUNNER_TEMP".into(), self.runner_temp.display().to_string()),
            ("GITHUB_PATH".into(), self.github_path.display().to_string()),
            ("GITHUB_OUTPUT".into(), self.github_output.display().to_string()),
            ("PATH".into(), path),
        ];
        for (k, v) in step["env"].as_object().into_iter().flatten() {
            env.push((k.clone(), self.expand(v.as_str().unwrap(), inputs)));
        }
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let args = ["--noprofile", "--norc", "-eo", "pipefail", script.to_str().unwrap()];
        crate::manifests::run_in(c, Path::new("bash"), cwd, &args, &env)
    }
}

/// The action as written: it installs the packaged release archive (sha256 checked against the
/// published `.sha256`, or the `sha256` input, which refuses a wrong one), runs `manifests` on a
/// drifted folder, prints annotations, writes SARIF and JUnit that validate, sets `drifted` and
/// `exit-code`, and its last step fails on drift unless `fail-on-drift` is false.
#[ignore = "needs the local control plane"]
#[test]
fn ci_formats_action_installs_checks_and_sets_outputs() {
    let c = crate::needs_cluster!("ci_formats_action_installs_checks_and_sets_outputs");
    let ns = unique_ns("ci-act");
    c.create_namespace(&ns);
    let repo = c.scratch.join("repo");
    write_folder(&repo, &ns);
    c.kubectl(&["apply", "-f", repo.join("k8s").to_str().unwrap()]).ok();
    c.kubectl(&["-n", &ns, "patch", "configmap", "web-config", "-p", r#"{"data":{"motd":"by hand"}}"#]).ok();

    // A release archive as scripts/package makes it, served from a file:// "releases" URL.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let version = env!("CARGO_PKG_VERSION");
    let releases = c.scratch.join("releases");
    let dist = releases.join(format!("v{version}"));
    let package = check(
        Command::new(root.join("scripts/package"))
            .args(["--binary", env!("CARGO_BIN_EXE_kubectl-drift"), "--out"])
            .arg(&dist)
            .arg("--manifest")
            .arg(c.scratch.join("krew.yaml")),
    );
    assert!(package.trim().ends_with("_linux_amd64.tar.gz"), "{package}");
    let url = format!("file://{}", releases.display());
    let tag = format!("v{version}");

    let action = ActionRun::new(&c.scratch);
    let wrong = "0".repeat(64);
    let run = action.step(
        &c,
        "Install kubectl-drift",
        &repo,
        &[("version", &tag), ("releases-url", &url), ("sha256", &wrong)],
    );
    assert_ne!(run.code(), 0);
    assert!(run.stdout().contains("::error title=kubectl-drift::sha256 of"), "{}", run.stdout());
    assert!(!action.github_path.exists(), "nothing installed");
    let run = action.step(&c, "Install kubectl-drift", &repo, &[("version", &tag), ("releases-url", &url)]);
    assert_eq!(run.code(), 0, "{}\n{}", run.stdout(), run.stderr());
    assert!(run.stdout().contains(version));

    let selector = format!("--selector ci={ns}");
    let inputs = [("paths", "k8s"), ("namespace", ns.as_str()), ("args", selector.as_str())];
    let run = action.step(&c, "Check for drift", &repo, &inputs);
    assert_eq!(run.code(), 0, "the step records the exit code and goes on: {}\n{}", run.stdout(), run.stderr());
    assert!(run.stdout().contains("::error file=k8s/app.yaml,line=4,title=drift%3A ConfigMap"), "{}", run.stdout());
    assert_eq!(action.output("exit-code").as_deref(), Some("1"));
    assert_eq!(action.output("drifted").as_deref(), Some("1"));
    let log = sarif(&repo.join("kubectl-drift.sarif"));
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 1);
    let report = junit(&repo.join("kubectl-drift.xml"));
    assert_eq!(report["failures"].as_u64(), Some(1));

    let fail = action.step(&c, "Fail on drift or errors", &repo, &[]);
    assert_eq!(fail.code(), 1, "{}", fail.stdout());
    let pass = action.step(&c, "Fail on drift or errors", &repo, &[("fail-on-drift", "false")]);
    assert_eq!(pass.code(), 0, "{}", pass.stdout());
}

/// A kustomization (an overlay over a base): a drifted object of the base points at the base's
/// file and the line of its document (kustomize's origin), in SARIF and in annotations.
#[ignore = "needs the local control plane"]
#[test]
fn ci_formats_kustomized_objects_point_at_the_file_they_came_from() {
    let c = crate::needs_cluster!("ci_formats_kustomized_objects_point_at_the_file_they_came_from");
    let ns = unique_ns("ci-kust");
    c.create_namespace(&ns);
    let repo = c.scratch.join("repo");
    std::fs::create_dir_all(repo.join("k8s/base")).unwrap();
    std::fs::create_dir_all(repo.join("k8s/overlays/prod")).unwrap();
    std::fs::write(repo.join("k8s/base/kustomization.yaml"), "resources: [config.yaml]\n").unwrap();
    std::fs::write(
        repo.join("k8s/base/config.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\ndata:\n  a: b\n---\n# the second\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\ndata:\n  mode: steady\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("k8s/overlays/prod/kustomization.yaml"),
        format!("namespace: {ns}\nresources: [../../base]\n"),
    )
    .unwrap();
    c.kubectl(&["apply", "-k", repo.join("k8s/overlays/prod").to_str().unwrap()]).ok();
    c.kubectl(&["-n", &ns, "patch", "configmap", "second", "-p", r#"{"data":{"mode":"by hand"}}"#]).ok();
    let run = crate::manifests::run_in(
        &c,
        Path::new(env!("CARGO_BIN_EXE_kubectl-drift")),
        &repo,
        &["manifests", "-k", "k8s/overlays/prod", "-o", "github", "--output-file", "sarif=drift.sarif"],
        &[],
    );
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    let notes = annotations(&run.stdout());
    assert_eq!(notes.len(), 1, "{}", run.stdout());
    assert_eq!((notes[0].prop("file"), notes[0].prop("line")), (Some("k8s/base/config.yaml"), Some("9")));
    assert!(document_at(&repo, "k8s/base/config.yaml", 9).contains("name: second"));
    let log = sarif(&repo.join("drift.sarif"));
    let phys = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
    assert_eq!(phys["artifactLocation"]["uri"], "k8s/base/config.yaml");
    assert_eq!(phys["region"]["startLine"], 9);
}

/// `versions -o junit`: the apis category of a file holding a removed API (no network needed):
/// a suite per category, the removed API a failure naming its replacement.
#[ignore = "needs the local control plane"]
#[test]
fn ci_formats_versions_junit() {
    let c = crate::needs_cluster!("ci_formats_versions_junit");
    let ns = unique_ns("ci-ver");
    c.create_namespace(&ns);
    let dir = c.scratch.join("k8s");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("old.yaml"),
        "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata:\n  name: web\nspec: {}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: fine\nspec: {}\n",
    )
    .unwrap();
    let j = c.scratch.join("versions.xml");
    let run = c.drift(&[
        "versions",
        "-n",
        &ns,
        "--category",
        "apis",
        "--manifests",
        dir.to_str().unwrap(),
        "--no-cache",
        "-o",
        "junit",
        "--output-file",
        &format!("json={}", j.with_extension("json").display()),
    ]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    std::fs::write(&j, run.stdout()).unwrap();
    let report = junit(&j);
    let apis = cases(&report, "versions apis");
    let failed: Vec<&Value> = apis.iter().filter(|c| c["result"] == "failure").collect();
    assert_eq!(failed.len(), 1, "{report:#}");
    let message = failed[0]["message"].as_str().unwrap();
    assert!(message.starts_with("removed: installed extensions/v1beta1, latest networking.k8s.io/v1"), "{message}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(j.with_extension("json")).unwrap()).unwrap();
    assert_eq!(json["clusters"][0]["report"]["summary"]["apis"], 1, "the JSON file of the same run: {json:#}");
}

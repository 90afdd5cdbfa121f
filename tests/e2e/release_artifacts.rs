//! Releases users can verify (issue 34): the signed Helm plugin package installed by real Helm 4
//! with GnuPG keys made here, the release workflows linted by actionlint, the dependency checks of
//! cargo-deny and the CycloneDX SBOM compared with Cargo.lock.
//!
//! The tools come from `scripts/test-env build` (DRIFT_ACTIONLINT, DRIFT_CARGO_DENY,
//! DRIFT_CARGO_CYCLONEDX, DRIFT_GPG in the export lines of `scripts/test-env up`); a test whose
//! tool is missing fails and says so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::{Cluster, Helm, Run};
use crate::install::{FileServer, entries, helm_run, krew_platform, plugins_dir};

const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The user ID of the key the test signs with (`helm plugin package --key` matches on it).
const SIGNER: &str = "kubectl-drift e2e release key";

fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tool(var: &str) -> PathBuf {
    let v = std::env::var(var).unwrap_or_default();
    assert!(!v.is_empty(), "{var} is not set: run scripts/test-env build, then eval \"$(scripts/test-env up)\"");
    let path = PathBuf::from(v);
    assert!(path.is_file(), "{var}={} does not exist: run scripts/test-env build", path.display());
    path
}

fn run(mut cmd: Command, what: &str) -> Run {
    cmd.stdin(Stdio::null());
    let out = cmd.output().unwrap_or_else(|e| panic!("failed to start {what}: {e}"));
    Run { out, what: what.to_string() }
}

fn all_output(r: &Run) -> String {
    format!("{}{}", r.stdout(), r.stderr())
}

// --- GnuPG --------------------------------------------------------------------------------------

/// A private GnuPG home; its gpg-agent is stopped when dropped.
struct GpgHome {
    gpg: PathBuf,
    dir: PathBuf,
}

impl GpgHome {
    fn new(gpg: &Path, dir: PathBuf) -> GpgHome {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        GpgHome { gpg: gpg.to_path_buf(), dir }
    }

    fn gpg(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new(&self.gpg);
        cmd.env("GNUPGHOME", &self.dir).arg("--batch").args(args);
        run(cmd, &format!("gpg {}", args.join(" ")))
    }

    /// A new signing key (Ed25519) with user ID `uid`, protected by the passphrase in `passphrase`
    /// when given.
    fn generate(&self, uid: &str, passphrase: Option<&Path>) {
        let spec = self.dir.join("key.spec");
        let protection = match passphrase {
            Some(file) => format!("Passphrase: {}\n", std::fs::read_to_string(file).unwrap()),
            None => "%no-protection\n".to_string(),
        };
        std::fs::write(
            &spec,
            format!(
                "Key-Type: eddsa\nKey-Curve: ed25519\nKey-Usage: sign\nName-Real: {uid}\n\
                 Name-Email: release@example.invalid\nExpire-Date: 0\n{protection}%commit\n"
            ),
        )
        .unwrap();
        self.gpg(&["--pinentry-mode", "loopback", "--gen-key", spec.to_str().unwrap()]).ok();
    }

    fn export_to(&self, args: &[&str], file: &Path) {
        let out = self.gpg(args).out;
        assert!(
            out.status.success() && !out.stdout.is_empty(),
            "gpg {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(file, &out.stdout).unwrap();
    }
}

impl Drop for GpgHome {
    fn drop(&mut self) {
        let gpgconf = self.gpg.with_file_name("gpgconf");
        let _ = Command::new(if gpgconf.exists() { gpgconf } else { PathBuf::from("gpgconf") })
            .env("GNUPGHOME", &self.dir)
            .args(["--kill", "all"])
            .stdin(Stdio::null())
            .output();
    }
}

// --- the signed Helm plugin package ---------------------------------------------------------------

/// `scripts/package` on the binary under test, signed with a key made here (protected by the
/// passphrase in `passphrase`): the archive, the Helm plugin package and its provenance file in
/// `dir`. The secret key is exported as release.yml does it (loopback pinentry: it keeps its
/// passphrase, which `helm plugin package` reads from the same file).
fn package_signed(c: &Cluster, signer: &GpgHome, passphrase: &Path, dir: &Path) -> PathBuf {
    let secring = signer.dir.join("secring.gpg");
    let pass = passphrase.to_str().unwrap();
    signer.export_to(&["--pinentry-mode", "loopback", "--passphrase-file", pass, "--export-secret-keys"], &secring);
    let mut cmd = package_cmd(c, dir);
    cmd.args(["--sign-key", SIGNER, "--keyring"]).arg(&secring).arg("--passphrase-file").arg(passphrase);
    let r = run(cmd, "scripts/package --sign-key");
    let archive = PathBuf::from(r.ok().trim());
    assert!(r.stderr().contains("signed by"), "{}", r.stderr());
    archive
}

fn sha256_of(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().expect("sha256sum");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or_default().to_string()
}

/// The names and contents of the files in a .tgz (tar reads it).
fn tgz_files(tgz: &Path, scratch: &Path) -> BTreeMap<String, Vec<u8>> {
    let dir = scratch.join("untar");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new("tar");
    cmd.arg("-xzf").arg(tgz).arg("-C").arg(&dir);
    run(cmd, "tar -xzf").ok();
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
                files.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    files
}

/// Helm 4 verifies the package's signature against the user's keyring: the install succeeds with
/// the project's key there (from an http URL and from a local file), is refused with no keyring,
/// with only another key, and for a package changed after signing. The signed checksums.sha256 in
/// the package then guards the binary archive the hook downloads. Helm 3, which does not verify,
/// installs the same package once unpacked.
#[ignore = "needs the local control plane"]
#[test]
fn release_artifacts_helm4_installs_the_signed_plugin_only_with_the_key() {
    let c = crate::needs_cluster!("rel-signed");
    let gpg = tool("DRIFT_GPG");
    let (os, arch) = krew_platform();
    let tgz_name = format!("drift-{VERSION}.tgz");

    // The project's signing key, and the package signed with it.
    let signer = GpgHome::new(&gpg, c.scratch.join("gnupg-signer"));
    let passphrase = c.scratch.join("passphrase");
    std::fs::write(&passphrase, "correct horse battery staple").unwrap();
    signer.generate(SIGNER, Some(&passphrase));
    let public_key = c.scratch.join("release-key.asc");
    signer.export_to(&["--armor", "--export", SIGNER], &public_key);
    let dist = c.scratch.join("dist");
    let archive = package_signed(&c, &signer, &passphrase, &dist);
    // The archive: the binary, its completion, the k9s plugins (deploy/k9s/drift.yaml), the licence
    // and the README.
    let in_archive = tgz_files(&archive, &c.scratch);
    let names: Vec<&str> = in_archive.keys().map(String::as_str).collect();
    assert_eq!(names, ["LICENSE", "README.md", "k9s-drift.yaml", "kubectl-drift", "kubectl_complete-drift"]);
    assert_eq!(in_archive["k9s-drift.yaml"], std::fs::read(checkout().join("deploy/k9s/drift.yaml")).unwrap());
    // The key really is protected: without its passphrase, helm plugin package cannot sign.
    let secring = signer.dir.join("secring.gpg");
    let wrong = c.scratch.join("wrong-passphrase");
    std::fs::write(&wrong, "not it").unwrap();
    let mut cmd = package_cmd(&c, &c.scratch.join("dist-wrong"));
    cmd.args(["--sign-key", SIGNER, "--keyring"]).arg(&secring).arg("--passphrase-file").arg(&wrong);
    let r = run(cmd, "scripts/package (wrong passphrase)");
    assert_eq!(r.code(), 2, "signed with a wrong passphrase: {}", all_output(&r));
    assert!(!c.scratch.join(format!("dist-wrong/drift-{VERSION}.tgz.prov")).exists());
    assert_eq!(archive.file_name().unwrap().to_str().unwrap(), format!("kubectl-drift_{VERSION}_{os}_{arch}.tar.gz"));
    let tgz = dist.join(&tgz_name);
    let prov = std::fs::read_to_string(dist.join(format!("{tgz_name}.prov"))).expect("the .prov file");
    assert!(prov.starts_with("-----BEGIN PGP SIGNED MESSAGE-----"), "{prov}");
    assert!(prov.contains("-----BEGIN PGP SIGNATURE-----"), "{prov}");
    assert!(prov.contains(&format!("{tgz_name}: sha256:{}", sha256_of(&tgz))), "{prov}");
    assert_eq!(
        std::fs::read_to_string(dist.join(format!("{tgz_name}.sha256"))).unwrap(),
        format!("{}  {tgz_name}\n", sha256_of(&tgz))
    );
    // The package: the plugin files and the archive's sha256, nothing of the checkout's else.
    let files = tgz_files(&tgz, &c.scratch);
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "drift/LICENSE",
            "drift/README.md",
            "drift/checksums.sha256",
            "drift/plugin.complete",
            "drift/plugin.yaml",
            "drift/scripts/helm-plugin-install.sh"
        ]
    );
    let sums = String::from_utf8(files["drift/checksums.sha256"].clone()).unwrap();
    assert_eq!(sums, format!("{}  kubectl-drift_{VERSION}_{os}_{arch}.tar.gz\n", sha256_of(&archive)));

    let server = FileServer::start(&dist);
    let url = format!("{}/{tgz_name}", server.url());
    let helm = Helm::V4;
    let plugins = plugins_dir(&c, helm);
    let user = GpgHome::new(&gpg, c.scratch.join("gnupg-user"));
    let user_home = user.dir.to_str().unwrap().to_string();
    let releases = server.url();
    let env = [("GNUPGHOME", user_home.as_str()), ("HELM_DRIFT_RELEASES_URL", releases.as_str())];
    let installed = |r: &Run| r.code() == 0 && plugins.join("drift/bin/kubectl-drift").exists();

    // No keyring at all: refused, nothing installed.
    let r = helm_run(&c, helm, &["plugin", "install", &url], &env);
    assert!(!installed(&r), "installed without a keyring: {}", all_output(&r));
    assert!(all_output(&r).contains("plugin verification failed"), "{}", all_output(&r));
    assert!(!plugins.join("drift").exists(), "{:?}", entries(&plugins));

    // A keyring with someone else's key only: refused.
    let other = GpgHome::new(&gpg, c.scratch.join("gnupg-other"));
    other.generate("someone else", None);
    let other_key = c.scratch.join("other.asc");
    other.export_to(&["--armor", "--export"], &other_key);
    user.gpg(&["--import", other_key.to_str().unwrap()]).ok();
    let r = helm_run(&c, helm, &["plugin", "install", &url], &env);
    assert!(!installed(&r), "installed with another key: {}", all_output(&r));
    assert!(all_output(&r).contains("plugin verification failed"), "{}", all_output(&r));
    assert!(!plugins.join("drift").exists(), "{:?}", entries(&plugins));

    // The project's key imported as the README says: verified, and the hook checks the downloaded
    // archive against the signed checksums.sha256.
    user.gpg(&["--import", public_key.to_str().unwrap()]).ok();
    let r = helm_run(&c, helm, &["plugin", "install", &url], &env);
    let out = all_output(&r);
    assert!(installed(&r), "the README's install failed: {out}");
    assert!(out.contains(&format!("Signed by: {SIGNER}")), "{out}");
    assert!(out.contains(&format!("Plugin Hash Verified: sha256:{}", sha256_of(&tgz))), "{out}");
    assert!(out.contains("matches the plugin's checksums.sha256"), "{out}");
    assert!(out.contains("Installed plugin: drift"), "{out}");
    let version = helm_run(&c, helm, &["drift", "--version"], &[]).ok();
    assert!(version.contains(VERSION) && version.contains("commit"), "{version}");
    assert_eq!(
        sha256_of(&plugins.join("drift/bin/kubectl-drift")),
        sha256_of(Path::new(env!("CARGO_BIN_EXE_kubectl-drift")))
    );
    helm_run(&c, helm, &["plugin", "uninstall", "drift"], &[]).ok();

    // The same from a local file (its .prov next to it), the archive given offline.
    let archive_s = archive.to_str().unwrap();
    let local_env = [("GNUPGHOME", user_home.as_str()), ("HELM_DRIFT_ARCHIVE", archive_s)];
    let r = helm_run(&c, helm, &["plugin", "install", tgz.to_str().unwrap()], &local_env);
    assert!(installed(&r), "install from the local file: {}", all_output(&r));
    assert!(all_output(&r).contains(&format!("Signed by: {SIGNER}")), "{}", all_output(&r));
    helm_run(&c, helm, &["plugin", "uninstall", "drift"], &[]).ok();

    // A package changed after signing (its hook edited, repacked, the old .prov kept): refused.
    let tampered = c.scratch.join("tampered");
    std::fs::create_dir_all(&tampered).unwrap();
    let unpacked = c.scratch.join("repack");
    std::fs::create_dir_all(&unpacked).unwrap();
    let mut cmd = Command::new("tar");
    cmd.arg("-xzf").arg(&tgz).arg("-C").arg(&unpacked);
    run(cmd, "tar -xzf").ok();
    let hook = unpacked.join("drift/scripts/helm-plugin-install.sh");
    let text = std::fs::read_to_string(&hook).unwrap();
    std::fs::write(&hook, text.replacen("set -eu\n", "set -eu\necho tampered\n", 1)).unwrap();
    let mut cmd = Command::new("tar");
    cmd.arg("-czf").arg(tampered.join(&tgz_name)).arg("-C").arg(&unpacked).arg("drift");
    run(cmd, "tar -czf").ok();
    std::fs::copy(dist.join(format!("{tgz_name}.prov")), tampered.join(format!("{tgz_name}.prov"))).unwrap();
    let bad = FileServer::start(&tampered);
    let r = helm_run(&c, helm, &["plugin", "install", &format!("{}/{tgz_name}", bad.url())], &env);
    let out = all_output(&r);
    assert!(!installed(&r), "a package changed after signing was installed: {out}");
    assert!(out.contains("plugin verification failed") && out.contains("sha256"), "{out}");
    assert!(!out.contains("tampered"), "the changed hook ran: {out}");
    let r = helm_run(&c, helm, &["plugin", "install", tampered.join(&tgz_name).to_str().unwrap()], &local_env);
    assert!(!installed(&r), "a changed local package was installed: {}", all_output(&r));
    assert!(all_output(&r).contains("plugin verification failed"), "{}", all_output(&r));
    assert!(!plugins.join("drift").exists(), "{:?}", entries(&plugins));

    // The verified package, but a release archive replaced together with its .sha256: the hook
    // refuses it, since the signed checksums.sha256 names another sha256.
    let swapped = c.scratch.join("swapped");
    std::fs::create_dir_all(&swapped).unwrap();
    for f in [tgz_name.clone(), format!("{tgz_name}.prov")] {
        std::fs::copy(dist.join(&f), swapped.join(&f)).unwrap();
    }
    let archive_name = archive.file_name().unwrap().to_str().unwrap().to_string();
    let mut bytes = std::fs::read(&archive).unwrap();
    bytes.extend_from_slice(b"\0");
    let swapped_archive = swapped.join(&archive_name);
    std::fs::write(&swapped_archive, bytes).unwrap();
    std::fs::write(
        swapped.join(format!("{archive_name}.sha256")),
        format!("{}  {archive_name}\n", sha256_of(&swapped_archive)),
    )
    .unwrap();
    let swap = FileServer::start(&swapped);
    let swap_url = swap.url();
    let swap_env = [("GNUPGHOME", user_home.as_str()), ("HELM_DRIFT_RELEASES_URL", swap_url.as_str())];
    let r = helm_run(&c, helm, &["plugin", "install", &format!("{swap_url}/{tgz_name}")], &swap_env);
    let out = all_output(&r);
    assert!(out.contains(&format!("Signed by: {SIGNER}")), "the package itself is genuine: {out}");
    assert!(!installed(&r), "an archive not in the signed list was installed: {out}");
    assert!(out.contains("the plugin's checksums.sha256 says") && out.contains("refusing to install"), "{out}");
    assert!(!plugins.join("drift/bin/kubectl-drift").exists());
    let _ = helm_run(&c, helm, &["plugin", "uninstall", "drift"], &[]);

    // Helm 3 installs the same package unpacked (a directory install). It cannot take the URL
    // itself: Helm 3 wants plugin.yaml at the archive's root, and Helm 4's `helm plugin package`
    // puts the files under drift/ (if this starts to work, the README can say so).
    let helm3_plugins = plugins_dir(&c, Helm::V3);
    let r = helm_run(&c, Helm::V3, &["plugin", "install", &url], &[("HELM_DRIFT_RELEASES_URL", releases.as_str())]);
    assert!(r.code() != 0 && all_output(&r).contains("plugin.yaml"), "helm 3 from the URL: {}", all_output(&r));
    let _ = helm_run(&c, Helm::V3, &["plugin", "uninstall", "drift"], &[]);
    let unpacked3 = c.scratch.join("helm3-unpacked");
    std::fs::create_dir_all(&unpacked3).unwrap();
    let mut cmd = Command::new("tar");
    cmd.arg("-xzf").arg(&tgz).arg("-C").arg(&unpacked3);
    run(cmd, "tar -xzf (helm 3)").ok();
    let dir3 = unpacked3.join("drift");
    let r = helm_run(
        &c,
        Helm::V3,
        &["plugin", "install", dir3.to_str().unwrap()],
        &[("HELM_DRIFT_RELEASES_URL", releases.as_str())],
    );
    let out = all_output(&r);
    assert_eq!(r.code(), 0, "helm 3: {out}");
    assert!(out.contains("matches the plugin's checksums.sha256") && out.contains("Installed plugin: drift"), "{out}");
    assert!(helm3_plugins.join("drift/bin/kubectl-drift").exists(), "{:?}", entries(&helm3_plugins));
    assert!(helm3_plugins.join("drift/checksums.sha256").exists(), "the signed checksums were not kept");
    assert!(helm_run(&c, Helm::V3, &["drift", "--version"], &[]).ok().contains(VERSION));
    helm_run(&c, Helm::V3, &["plugin", "uninstall", "drift"], &[]).ok();
}

/// `scripts/package` for the test binary into `out`, its krew manifest `out/drift.yaml`, with
/// Helm 4; the caller adds the signing flags.
fn package_cmd(c: &Cluster, out: &Path) -> Command {
    let mut cmd = Command::new(checkout().join("scripts/package"));
    cmd.arg("--binary").arg(env!("CARGO_BIN_EXE_kubectl-drift")).arg("--out").arg(out);
    cmd.arg("--manifest").arg(out.join("drift.yaml")).arg("--helm").arg(&c.helm4);
    cmd
}

/// A packaging run with the defaults writes its krew manifest into its output directory and
/// changes no file of the checkout (it rewrote the committed krew/drift.yaml before).
#[ignore = "needs the local control plane"]
#[test]
fn release_artifacts_packaging_leaves_the_checkout_as_it_was() {
    let c = crate::needs_cluster!("rel-clean-checkout");
    let out = c.scratch.join("dist-defaults");
    let committed = checkout().join("krew/drift.yaml");
    let before = std::fs::read(&committed).unwrap();
    let mut cmd = Command::new(checkout().join("scripts/package"));
    cmd.arg("--binary").arg(env!("CARGO_BIN_EXE_kubectl-drift")).arg("--out").arg(&out).arg("--no-helm-plugin");
    run(cmd, "scripts/package (defaults)").ok();
    let written = std::fs::read_to_string(out.join("drift.yaml")).expect("the manifest is written into --out");
    assert!(written.contains(&format!("sha256: {}", sha256_of(&only_file(&out, ".tar.gz")))), "{written}");
    assert_eq!(std::fs::read(&committed).unwrap(), before, "krew/drift.yaml was rewritten");
}

/// The one file in `dir` whose name ends with `suffix`.
fn only_file(dir: &Path, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.into_iter().next().unwrap()
}

/// Without --sign-key the package has no .prov (an old one is removed), and Helm 4 refuses to
/// install it with verification on: a release is only verifiable when it is signed.
#[ignore = "needs the local control plane"]
#[test]
fn release_artifacts_unsigned_package_has_no_prov_and_helm4_refuses_it() {
    let c = crate::needs_cluster!("rel-unsigned");
    let dist = c.scratch.join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    let stale = dist.join(format!("drift-{VERSION}.tgz.prov"));
    std::fs::write(&stale, "stale").unwrap();
    run(package_cmd(&c, &dist), "scripts/package (unsigned)").ok();
    let tgz = dist.join(format!("drift-{VERSION}.tgz"));
    assert!(tgz.is_file());
    assert!(!stale.exists(), "a stale .prov was left next to an unsigned package");
    let gnupg = c.scratch.join("gnupg-empty");
    std::fs::create_dir_all(&gnupg).unwrap();
    let r = helm_run(
        &c,
        Helm::V4,
        &["plugin", "install", tgz.to_str().unwrap()],
        &[("GNUPGHOME", gnupg.to_str().unwrap())],
    );
    assert_ne!(r.code(), 0, "{}", all_output(&r));
    assert!(all_output(&r).contains("no provenance file"), "{}", all_output(&r));

    // A key that is not in the keyring given: scripts/package stops before writing anything.
    let mut cmd = package_cmd(&c, &dist);
    cmd.args(["--sign-key", "nobody", "--keyring"]).arg(c.scratch.join("no-such-keyring.gpg"));
    let r = run(cmd, "scripts/package --sign-key (no keyring)");
    assert_eq!(r.code(), 2, "{}", all_output(&r));
    assert!(r.stderr().contains("keyring") && r.stderr().contains("not found"), "{}", r.stderr());
}

// --- workflows ------------------------------------------------------------------------------------

fn workflow(name: &str) -> String {
    std::fs::read_to_string(checkout().join(".github/workflows").join(name))
        .unwrap_or_else(|e| panic!(".github/workflows/{name}: {e}"))
}

/// actionlint (pinned, built by scripts/test-env) passes on every workflow, and fails on a broken
/// one, so it is really checking.
#[ignore = "needs actionlint from scripts/test-env build"]
#[test]
fn release_artifacts_workflows_lint_clean() {
    let actionlint = tool("DRIFT_ACTIONLINT");
    let root = checkout();
    let dir = root.join(".github/workflows");
    let mut workflows: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    workflows.sort();
    let names: Vec<String> = workflows.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert!(names.contains(&"ci.yml".to_string()) && names.contains(&"release.yml".to_string()), "{names:?}");
    let mut cmd = Command::new(&actionlint);
    cmd.arg("-no-color").args(&workflows).current_dir(&root);
    let r = run(cmd, "actionlint .github/workflows/*");
    assert_eq!(r.code(), 0, "actionlint:\n{}", all_output(&r));

    // A broken copy (a job that needs one that does not exist, an unknown expression) fails.
    let scratch = std::env::temp_dir().join(format!("drift-rel-actionlint-{}", std::process::id()));
    let wf = scratch.join(".github/workflows");
    std::fs::create_dir_all(&wf).unwrap();
    let broken = workflow("release.yml")
        .replace("needs: [version, build]", "needs: [version, no-such-job]")
        .replace("${{ needs.version.outputs.version }}", "${{ needs.versions.outputs.version }}");
    std::fs::write(wf.join("release.yml"), broken).unwrap();
    let mut cmd = Command::new(&actionlint);
    cmd.arg("-no-color").arg(wf.join("release.yml")).current_dir(&scratch);
    let r = run(cmd, "actionlint (broken)");
    let _ = std::fs::remove_dir_all(&scratch);
    assert_ne!(r.code(), 0, "actionlint passed a broken workflow");
    assert!(all_output(&r).contains("no-such-job"), "{}", all_output(&r));
}

/// The release workflow builds every artefact the README and docs/releasing.md name, and CI runs
/// scripts/test and the advisory check.
#[test]
fn release_artifacts_workflows_describe_every_artifact() {
    let release = workflow("release.yml");
    assert!(release.contains("tags: [\"v*\"]"), "release.yml runs on version tags");
    for target in [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        assert!(release.contains(&format!("target: {target},")), "release.yml does not build {target}");
    }
    for needle in [
        "cargo zigbuild",
        "scripts/package --binary",
        "--sign-key",
        "sha256sum -c",
        "dist/drift.yaml",
        "grep -c 'sha256: ' dist/drift.yaml)\" -eq 5",
        "helm plugin verify",
        "cargo cyclonedx",
        ".cdx.json",
        "file: deploy/Dockerfile",
        "platforms: linux/amd64,linux/arm64",
        "steps.push.outputs.digest",
        "gh release create",
        "dist/*",
        "kubectl-drift-release-key.asc",
        "scripts/package-chart --out dist",
        "helm push \"dist/kubectl-drift-$VERSION.tgz\" \"oci://ghcr.io/$owner/charts\"",
        "charts/kubectl-drift/Chart.yaml",
    ] {
        assert!(release.contains(needle), "release.yml does not contain {needle:?}");
    }
    let ci = workflow("ci.yml");
    for needle in
        ["pull_request", "push:", "run: scripts/test", "actions/cache@", "~/.cache/kubectl-drift", "check advisories"]
    {
        assert!(ci.contains(needle), "ci.yml does not contain {needle:?}");
    }

    // What the README and docs/releasing.md tell users to download is what the release makes.
    let readme = std::fs::read_to_string(checkout().join("README.md")).unwrap();
    let releasing = std::fs::read_to_string(checkout().join("docs/releasing.md")).expect("docs/releasing.md");
    for doc in [&readme, &releasing] {
        assert!(doc.contains(&format!("/releases/download/v{VERSION}/drift-{VERSION}.tgz")), "the Helm 4 install URL");
        assert!(doc.contains("kubectl-drift-release-key.asc"), "where the key comes from");
    }
    for name in [
        format!("kubectl-drift_{VERSION}_linux_amd64.tar.gz.sha256"),
        format!("drift-{VERSION}.tgz.prov"),
        format!("kubectl-drift_{VERSION}.cdx.json"),
        "sha256sum -c".to_string(),
        "helm plugin verify".to_string(),
        "docs/release-key.asc".to_string(),
    ] {
        assert!(releasing.contains(&name), "docs/releasing.md does not name {name}");
    }
    // --verify=false only for git or directory installs.
    for line in readme.lines().filter(|l| l.contains("--verify=false")) {
        assert!(!line.contains(".tgz"), "README turns verification off for a package: {line}");
    }
}

// --- dependency checks --------------------------------------------------------------------------

/// A copy of the package (the manifest, lock file, sources: a few MB) in scratch space, for the
/// tools that write next to Cargo.toml or read a config beside it, so the checkout is never
/// written to.
fn package_copy(name: &str) -> PathBuf {
    let scratch = std::env::temp_dir().join(format!("drift-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let mut cmd = Command::new("cp");
    cmd.arg("-R");
    for f in ["Cargo.toml", "Cargo.lock", "build.rs", "src", "tests", "README.md", "LICENSE"] {
        cmd.arg(checkout().join(f));
    }
    cmd.arg(&scratch);
    run(cmd, "cp -R (the package)").ok();
    scratch
}

fn cargo_deny(args: &[&str], dir: &Path) -> Run {
    let deny = tool("DRIFT_CARGO_DENY");
    let mut cmd = Command::new(&deny);
    cmd.current_dir(dir).args(["--locked", "--offline", "check"]).args(args);
    run(cmd, &format!("cargo-deny check {}", args.join(" ")))
}

/// cargo-deny's licence, ban and source checks pass with deny.toml (advisories need the network:
/// ci.yml runs them), and the licence check fails once a licence the tree needs is not allowed.
#[ignore = "needs cargo-deny from scripts/test-env build"]
#[test]
fn release_artifacts_cargo_deny_licenses_bans_sources() {
    let r = cargo_deny(&["licenses", "bans", "sources"], &checkout());
    let out = all_output(&r);
    assert_eq!(r.code(), 0, "cargo deny check licenses bans sources:\n{out}");
    assert!(out.contains("bans ok, licenses ok, sources ok"), "{out}");

    // Without MIT allowed, the crates that are MIT only are refused.
    let config = std::fs::read_to_string(checkout().join("deny.toml")).unwrap();
    assert!(config.contains("  \"MIT\",\n"));
    let copy = package_copy("deny");
    std::fs::write(copy.join("deny.toml"), config.replace("  \"MIT\",\n", "")).unwrap();
    let r = cargo_deny(&["licenses"], &copy);
    let _ = std::fs::remove_dir_all(&copy);
    assert_ne!(r.code(), 0, "cargo deny passed without MIT allowed:\n{}", all_output(&r));
    assert!(all_output(&r).contains("error[rejected]"), "{}", all_output(&r));
}

/// The crates that go into the binary, from Cargo.lock through `cargo metadata`: everything the
/// package reaches by normal and build dependencies on any platform (dev-dependencies are only
/// for the tests). Returns name@version.
fn binary_crates_from_lock() -> (BTreeSet<String>, BTreeSet<String>) {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(checkout())
        .output()
        .expect("cargo metadata");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id_name: BTreeMap<&str, String> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (p["id"].as_str().unwrap(), format!("{}@{}", p["name"].as_str().unwrap(), p["version"].as_str().unwrap()))
        })
        .collect();
    let nodes: BTreeMap<&str, &Value> =
        meta["resolve"]["nodes"].as_array().unwrap().iter().map(|n| (n["id"].as_str().unwrap(), n)).collect();
    let root = meta["resolve"]["root"].as_str().unwrap();
    let mut seen = BTreeSet::new();
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let kinds = dep["dep_kinds"].as_array().unwrap();
            if kinds.iter().any(|k| k["kind"].as_str() != Some("dev")) {
                stack.push(dep["pkg"].as_str().unwrap());
            }
        }
    }
    seen.remove(root);
    let binary = seen.iter().map(|id| id_name[id].clone()).collect();
    let all = id_name.iter().filter(|(id, _)| **id != root).map(|(_, n)| n.clone()).collect();
    (binary, all)
}

/// The CycloneDX SBOM that the release workflow makes (same command) names exactly the crates of
/// Cargo.lock that the binary is built from, each with its crates.io purl; the crates of Cargo.lock
/// it leaves out are the tests' dev-dependencies.
#[ignore = "needs cargo-cyclonedx from scripts/test-env build"]
#[test]
fn release_artifacts_sbom_names_the_crates_in_cargo_lock() {
    let cyclonedx = tool("DRIFT_CARGO_CYCLONEDX");
    let release = workflow("release.yml");
    let args = "--format json --spec-version 1.5 --target all --override-filename sbom";
    assert!(release.contains(&format!("cargo cyclonedx {args}")), "release.yml makes the SBOM another way");

    // cargo-cyclonedx writes next to Cargo.toml: run it on a copy.
    let scratch = package_copy("sbom");
    let mut cmd = Command::new(&cyclonedx);
    cmd.arg("cyclonedx").args(args.split(' ')).current_dir(&scratch);
    let r = run(cmd, "cargo cyclonedx");
    let sbom_text = std::fs::read_to_string(scratch.join("sbom.json"));
    let _ = std::fs::remove_dir_all(&scratch);
    assert_eq!(r.code(), 0, "cargo cyclonedx:\n{}", all_output(&r));
    let sbom: Value = serde_json::from_str(&sbom_text.expect("sbom.json written")).unwrap();
    assert_eq!(sbom["bomFormat"], "CycloneDX");
    assert_eq!(sbom["specVersion"], "1.5");
    let main = &sbom["metadata"]["component"];
    assert_eq!(main["name"], "kubectl-drift");
    assert_eq!(main["version"], VERSION);

    let mut in_sbom = BTreeSet::new();
    for c in sbom["components"].as_array().expect("components") {
        let (name, version) = (c["name"].as_str().unwrap(), c["version"].as_str().unwrap());
        assert_eq!(
            c["purl"].as_str().unwrap_or_default(),
            format!("pkg:cargo/{name}@{version}"),
            "{name} {version}: not a crates.io purl"
        );
        in_sbom.insert(format!("{name}@{version}"));
    }
    let (binary, all) = binary_crates_from_lock();
    let missing: Vec<&String> = binary.difference(&in_sbom).collect();
    let extra: Vec<&String> = in_sbom.difference(&binary).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "not in the SBOM: {missing:?}\nnot built into the binary: {extra:?}"
    );
    assert!(binary.len() > 200, "only {} crates", binary.len());
    // Every crate of the SBOM is in Cargo.lock; those left out are dev-dependencies (the tests').
    assert!(in_sbom.is_subset(&all));
    let left_out: BTreeSet<&String> = all.difference(&in_sbom).collect();
    for dev in ["insta", "proptest"] {
        assert!(left_out.iter().any(|n| n.starts_with(&format!("{dev}@"))), "{dev} is a dev-dependency: {left_out:?}");
    }
}

// --- version info ---------------------------------------------------------------------------------

/// build.rs itself, for its date conversion (its `main` is the build script's, unused here).
#[allow(dead_code)]
#[path = "../../build.rs"]
mod build_script;

/// SOURCE_DATE_EPOCH becomes the UTC time `--version` prints, as `date -u` says it.
#[test]
fn release_artifacts_build_date_from_source_date_epoch() {
    for (secs, want) in [
        (0, "1970-01-01T00:00:00Z"),
        (951_782_400, "2000-02-29T00:00:00Z"),
        (1_796_182_273, "2026-12-02T03:31:13Z"),
        (4_102_444_799, "2099-12-31T23:59:59Z"),
        (-1, "1969-12-31T23:59:59Z"),
    ] {
        assert_eq!(build_script::rfc3339_utc(secs), want, "{secs}");
        let out = Command::new("date").args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%dT%H:%M:%SZ"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), want, "date -u -d @{secs}");
    }
}

/// `--version` names the version, the commit and either the build date (a release build) or
/// "dev build".
#[test]
fn release_artifacts_version_names_commit_and_build() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-drift")).arg("--version").output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let re = regex::Regex::new(&format!(
        r"^kubectl-drift {} \(commit ([0-9a-f]{{12}}|unknown), (dev build|built \d{{4}}-\d\d-\d\d(T\d\d:\d\d:\d\dZ)?)\)$",
        regex::escape(VERSION)
    ))
    .unwrap();
    assert!(re.is_match(&said), "{said}");
    let build_env = std::env::var("SOURCE_DATE_EPOCH").is_ok() || std::env::var("DRIFT_BUILD_DATE").is_ok();
    assert!(build_env || said.ends_with(", dev build)"), "a build without a date says so: {said}");
}

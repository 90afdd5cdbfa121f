//! Rendering a stored chart again with `helm template` (the helm binary Helm gives its plugins,
//! `$HELM_BIN`, else `helm` on PATH: chosen by the app). Rendering is local: `helm template`
//! without `--validate` never talks to the cluster. The cluster's version and API versions are
//! passed as Helm's capabilities, so that `.Capabilities` answers as it did at install time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::source::child::{self, ChildError};

/// What a render is given besides the chart folder.
#[derive(Debug, Clone, Default)]
pub struct RenderSettings {
    /// The helm binary.
    pub helm: PathBuf,
    pub release: String,
    pub namespace: String,
    /// `--kube-version` (the live cluster's `gitVersion`), when known.
    pub kube_version: Option<String>,
    /// `--api-versions`: every served group/version and group/version/Kind.
    pub api_versions: Vec<String>,
    /// Give up after this long.
    pub timeout: Duration,
}

/// Why a render failed.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No helm binary.
    #[error(
        "no helm binary: {helm} was not found (adopt renders the release's chart with helm: set HELM_BIN or put helm on PATH)"
    )]
    NoHelm { helm: String },
    /// helm could not be started.
    #[error("running {helm}: {message}")]
    Spawn { helm: String, message: String },
    /// helm said no.
    #[error("helm template failed: {message}")]
    Failed { message: String },
    /// It took too long.
    #[error("helm template did not finish within {secs}s")]
    TimedOut { secs: u64 },
    /// Its output is not text.
    #[error("helm template wrote something that is not UTF-8 text")]
    NotText,
}

/// `helm template RELEASE CHART_DIR -n NS --is-upgrade --skip-tests -f VALUES...`: the
/// rendered manifest stream (hooks included; CRDs of `crds/` left out, as in the stored
/// manifest). Later values files win, as with `helm upgrade -f a -f b`.
pub fn render(settings: &RenderSettings, chart_dir: &Path, values_files: &[PathBuf]) -> Result<String, RenderError> {
    let args: Vec<std::ffi::OsString> = values_files.iter().flat_map(|f| ["--values".into(), f.into()]).collect();
    render_chart(settings, chart_dir.as_os_str(), &args)
}

/// `helm template RELEASE CHART ...` for any chart `helm upgrade` accepts (a folder, a packaged
/// chart, `repo/name`, `oci://...`), with more arguments after the capabilities (`--version`,
/// `--values`, `--set`...): the rendered stream, as [`render`].
pub fn render_chart(
    settings: &RenderSettings,
    chart: &std::ffi::OsStr,
    args: &[std::ffi::OsString],
) -> Result<String, RenderError> {
    let helm = settings.helm.display().to_string();
    let mut cmd = Command::new(&settings.helm);
    cmd.arg("template")
        .arg(&settings.release)
        .arg(chart)
        .arg("--namespace")
        .arg(&settings.namespace)
        .arg("--is-upgrade")
        .arg("--skip-tests");
    if let Some(v) = &settings.kube_version {
        cmd.arg("--kube-version").arg(v);
    }
    for a in &settings.api_versions {
        cmd.arg("--api-versions").arg(a);
    }
    cmd.args(args);
    // Helm's own environment would point a plugin's child at the user's cluster: template never
    // connects, but keep it from reading a kubeconfig at all.
    cmd.env_remove("HELM_KUBECONTEXT");
    let done = child::run(&mut cmd, Some(Instant::now() + settings.timeout)).map_err(|e| match e {
        ChildError::NotFound => RenderError::NoHelm { helm: helm.clone() },
        ChildError::Spawn(message) => RenderError::Spawn { helm: helm.clone(), message },
        ChildError::TimedOut => RenderError::TimedOut { secs: settings.timeout.as_secs() },
    })?;
    if !done.status.success() {
        let line = child::one_line(&done.stderr);
        let message = line.strip_prefix("Error: ").unwrap_or(&line).to_string();
        return Err(RenderError::Failed {
            message: if message.is_empty() { format!("helm exited with {}", done.status) } else { message },
        });
    }
    let out = done.stdout;
    String::from_utf8(out).map_err(|_| RenderError::NotText)
}

//! Where a run's report goes: stdout in the `-o` format, and each `--output-file FORMAT=PATH`
//! in its own format, from the one report of the run (a pipeline gets human output on stdout and
//! JUnit or SARIF files without running twice). Files are written without colour, after stdout.

use std::fs::File;
use std::io::{BufWriter, Write};

use crate::app::cli::{OrphansFormat, OutputFile, OutputFormat};
use crate::app::error::AppError;
use crate::app::fleet::{self, Tabular};
use crate::render::ci::Places;
use crate::render::{self, Theme};
use crate::report::fleet::Fleet;
use crate::report::orphans::OrphanReport;
use crate::report::versions::VersionsReport;
use crate::report::{DriftReport, ManifestsReport, SourceType};

/// Write each `--output-file` with `write(file, format)`; an error names the file.
pub(crate) fn to_files<F: Copy>(
    files: &[OutputFile<F>],
    mut write: impl FnMut(&mut BufWriter<File>, F) -> std::io::Result<()>,
) -> Result<(), AppError> {
    for f in files {
        let failed = |source| AppError::OutputFile { path: f.path.clone(), source };
        let mut out = BufWriter::new(File::create(&f.path).map_err(failed)?);
        write(&mut out, f.format).map_err(failed)?;
        out.flush().map_err(failed)?;
    }
    Ok(())
}

/// A `release` report in `format`.
pub(crate) fn release<W: Write>(
    out: &mut W,
    fleet: &Fleet<DriftReport>,
    format: OutputFormat,
    theme: &Theme,
    quiet: bool,
) -> std::io::Result<()> {
    match format {
        OutputFormat::Text => {
            fleet::text(out, fleet, theme, |out, report| render::text::report(out, report, theme, quiet))
        }
        OutputFormat::Json => render::json(out, fleet),
        OutputFormat::Yaml => render::yaml(out, fleet),
        OutputFormat::Junit => render::junit::releases(out, fleet),
        OutputFormat::Sarif => render::sarif::releases(out, fleet),
        OutputFormat::Github => render::github::releases(out, fleet),
    }
}

/// A `manifests` report in `format`; `places` locates objects for SARIF and GitHub.
pub(crate) fn manifests<W: Write>(
    out: &mut W,
    fleet: &Fleet<ManifestsReport>,
    format: OutputFormat,
    theme: &Theme,
    quiet: bool,
    places: &Places,
) -> std::io::Result<()> {
    match format {
        OutputFormat::Text => {
            fleet::text(out, fleet, theme, |out, report| render::text::manifests_report(out, report, theme, quiet))
        }
        OutputFormat::Json => render::json(out, fleet),
        OutputFormat::Yaml => render::yaml(out, fleet),
        OutputFormat::Junit => render::junit::manifests(out, fleet),
        OutputFormat::Sarif => render::sarif::manifests(out, fleet, places),
        OutputFormat::Github => render::github::manifests(out, fleet, places),
    }
}

/// Whether any of `formats` points at lines of files (SARIF, GitHub annotations).
pub(crate) fn needs_places(formats: impl IntoIterator<Item = OutputFormat>) -> bool {
    formats.into_iter().any(|f| matches!(f, OutputFormat::Sarif | OutputFormat::Github))
}

/// Where the objects of a manifests run sit: each file's documents' first lines (the files are
/// read again: the report keeps `file#N`, not lines), each kustomization's file, and the lines of
/// kustomized objects in the files they came from.
pub(crate) fn places(fleet: &Fleet<ManifestsReport>) -> Places {
    let mut places = Places::default();
    for file in fleet.clusters.iter().filter_map(|c| c.report.as_ref()).flat_map(|r| &r.files) {
        let path = std::path::Path::new(&file.origin.path);
        match file.origin.source_type {
            SourceType::File => {
                if places.lines.contains_key(&format!("{}#1", file.origin.path)) {
                    continue;
                }
                for (i, line) in
                    crate::source::manifest_files::document_lines(path).unwrap_or_default().into_iter().enumerate()
                {
                    places.lines.insert(format!("{}#{}", file.origin.path, i + 1), line);
                }
            }
            SourceType::Kustomization => {
                if let Some(k) = crate::source::kustomize::kustomization_file(path) {
                    places.kustomizations.insert(file.origin.path.clone(), k.display().to_string());
                }
                // Objects whose source is the file they came from (kustomize's origin).
                for source in file.objects.iter().filter_map(|o| o.source.as_ref()) {
                    if places.origin_files.contains(source) {
                        continue;
                    }
                    let Some(objects) = crate::source::manifest_files::object_lines(std::path::Path::new(source))
                    else {
                        continue;
                    };
                    places.origin_files.insert(source.clone());
                    for (kind, name, line) in objects {
                        places.objects.insert((source.clone(), kind, name), line);
                    }
                }
            }
            SourceType::FluxKustomization | SourceType::ArgoApplication => {}
        }
    }
    places
}

/// The table, CSV, JSON, YAML and JUnit writers of `orphans`.
pub(crate) fn orphans_tabular<W: Write>() -> Tabular<W, OrphanReport> {
    Tabular {
        table: render::orphans::table_of,
        csv_header: render::orphans::csv_header,
        csv: render::orphans::csv,
        junit: render::junit::orphans,
    }
}

/// The table, CSV, JSON, YAML and JUnit writers of `versions`.
pub(crate) fn versions_tabular<W: Write>() -> Tabular<W, VersionsReport> {
    Tabular {
        table: render::versions::table_of,
        csv_header: render::versions::csv_header,
        csv: render::versions::csv,
        junit: render::junit::versions,
    }
}

/// `--output-file` of a tabular command (orphans, versions).
pub(crate) fn tabular_files<T: serde::Serialize>(
    files: &[OutputFile<OrphansFormat>],
    fleet: &Fleet<T>,
    tabular: Tabular<BufWriter<File>, T>,
) -> Result<(), AppError> {
    to_files(files, |out, format| tabular.write(out, fleet, format, &Theme::new(false)))
}

//! The releases scope as the API shows it: the report of `release --all -o json`, with the line
//! diff the text output prints (`render::diff`) added as `diff` to each field shown as one (a
//! changed multi-line string). The diff is computed from the report's values, which are
//! redacted when the report is built, so a Secret's value never reaches it.

use serde_json::Value;

use crate::render::diff;
use crate::report::DriftReport;

/// The JSON body of the report in `GET /api/releases`.
pub fn report_json(report: &DriftReport) -> Vec<u8> {
    let mut fields = report.releases.iter().flat_map(|r| &r.objects).flat_map(|o| &o.fields);
    if !fields.any(|f| diff::texts(f).is_some()) {
        return serde_json::to_vec(report).expect("the report serialises");
    }
    let mut json = serde_json::to_value(report).expect("the report serialises");
    add_diffs(report, &mut json);
    serde_json::to_vec(&json).expect("the report serialises")
}

/// Put each field's line diff next to it in `json` (the report serialised: the same releases,
/// objects and fields in the same order).
fn add_diffs(report: &DriftReport, json: &mut Value) {
    for (r, release) in report.releases.iter().enumerate() {
        for (o, object) in release.objects.iter().enumerate() {
            for (f, field) in object.fields.iter().enumerate() {
                let Some(lines) = diff::field_lines(field) else { continue };
                if let Some(Value::Object(slot)) = json
                    .get_mut("releases")
                    .and_then(|x| x.get_mut(r))
                    .and_then(|x| x.get_mut("objects"))
                    .and_then(|x| x.get_mut(o))
                    .and_then(|x| x.get_mut("fields"))
                    .and_then(|x| x.get_mut(f))
                {
                    slot.insert("diff".into(), serde_json::to_value(lines).expect("lines serialise"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::field::{Change, Drift};
    use crate::report::{ObjectReport, ObjectState, ReleaseReport, Status, field_report};
    use serde_json::json;

    const APP_YAML: &str = "server:\n  port: 8080\n  timeout: 30s\nfeatures:\n  search: true\n";

    fn drift(path: &str, change: Change, desired: Option<Value>, live: Option<Value>) -> Drift {
        Drift { path: path.parse().unwrap(), change, desired, live, owner: None, ignored: None }
    }

    fn object(kind: &str, name: &str, drifts: &[Drift]) -> ObjectReport {
        ObjectReport {
            fields: drifts.iter().map(|d| field_report(kind, d, false)).collect(),
            ..ObjectReport::new("v1", kind, Some("shop".into()), name, ObjectState::Changed)
        }
    }

    fn report() -> DriftReport {
        let config = object(
            "ConfigMap",
            "shop-config",
            &[
                drift("data.LOG_LEVEL", Change::Changed, Some(json!("info")), Some(json!("debug"))),
                drift(
                    r#"data["app.yaml"]"#,
                    Change::Changed,
                    Some(json!(APP_YAML)),
                    Some(json!(APP_YAML.replace("30s", "120s"))),
                ),
                drift(r#"data["extra.yaml"]"#, Change::Added, None, Some(json!("a: 1\nb: 2\n"))),
            ],
        );
        let secret = object(
            "Secret",
            "shop-secret",
            &[
                drift(
                    r#"stringData["config.ini"]"#,
                    Change::Changed,
                    Some(json!("user = app\npassword = desired-LINE-SECRET\n")),
                    Some(json!("user = app\npassword = live-LINE-SECRET\n")),
                ),
                drift(
                    r#"data["key.pem"]"#,
                    Change::Changed,
                    Some(json!("LS0tLS1CRUdJTgpkZXNpcmVkLUxJTkUtU0VDUkVUCg==")),
                    Some(json!("LS0tLS1CRUdJTgpsaXZlLUxJTkUtU0VDUkVUCg==")),
                ),
            ],
        );
        let release = ReleaseReport {
            objects: vec![config, secret],
            status: Status::Drifted,
            ..ReleaseReport::failed_release("shop".into(), "shop".into(), 1, String::new())
        };
        DriftReport::new(vec![release], 2)
    }

    #[test]
    fn multi_line_fields_carry_the_text_outputs_diff() {
        let rep = report();
        let json: Value = serde_json::from_slice(&report_json(&rep)).unwrap();
        let fields = &json["releases"][0]["objects"][0]["fields"];
        // Everything else is the report as the CLI writes it.
        let mut without = json.clone();
        without["releases"][0]["objects"][0]["fields"][1].as_object_mut().unwrap().remove("diff");
        assert_eq!(without, serde_json::to_value(&rep).unwrap());
        // Single-line values and additions have no diff.
        assert!(fields[0].get("diff").is_none(), "{fields:#}");
        assert!(fields[2].get("diff").is_none(), "{fields:#}");
        // The multi-line value has the lines the text output prints, with their kinds.
        let diff = fields[1]["diff"].as_array().unwrap();
        let mut text = Vec::new();
        crate::render::text::field(
            &mut text,
            &rep.releases[0].objects[0].fields[1],
            &crate::render::Theme::plain(),
            "",
        )
        .unwrap();
        let text = String::from_utf8(text).unwrap();
        let printed: Vec<&str> = text.lines().skip(1).map(|l| l.trim_start_matches("    ")).collect();
        let sent: Vec<&str> = diff.iter().map(|l| l["text"].as_str().unwrap()).collect();
        assert_eq!(sent, printed);
        assert!(diff.contains(&json!({"kind": "removed", "text": "-  timeout: 30s"})), "{diff:#?}");
        assert!(diff.contains(&json!({"kind": "added", "text": "+  timeout: 120s"})), "{diff:#?}");
        assert_eq!(diff[0], json!({"kind": "header", "text": "--- desired"}));
        assert_eq!(diff[2], json!({"kind": "hunk", "text": "@@ -1,5 +1,5 @@"}));
        assert_eq!(diff[3], json!({"kind": "context", "text": " server:"}));
    }

    #[test]
    fn secret_values_never_reach_the_diff() {
        let body = String::from_utf8(report_json(&report())).unwrap();
        let json: Value = serde_json::from_str(&body).unwrap();
        for f in json["releases"][0]["objects"][1]["fields"].as_array().unwrap() {
            assert!(f.get("diff").is_none(), "{f:#}");
            assert!(f["desired"].as_str().unwrap().starts_with("<redacted, "), "{f:#}");
        }
        for hidden in ["LINE-SECRET", "password =", "BEGIN", "LS0tLS1CRUdJTg"] {
            assert!(!body.contains(hidden), "{hidden} in {body}");
        }
    }
}

//! What a report says about its profile above its values, as Go pprof
//! prints it: the profile's labels and the active filters.

use crate::measure::{percentage, scale, scaled_label, Measure};
use crate::options::Options;
use crate::stacks::Stacks;

/// The profile's labels as Go pprof prints them above a report: the
/// main file and its build id, the comments, the sample type, the
/// duration and the total (`total` in `measure`), then the active
/// filters.
pub fn profile_labels(
    stacks: &Stacks,
    options: &Options,
    measure: &Measure,
    total: i64,
) -> Vec<String> {
    let profile = stacks.profile();
    let mut labels = Vec::new();
    if let Some(m) = profile.mappings.first() {
        if !m.path.is_empty() {
            let base = m.path.rsplit('/').next().unwrap_or(&m.path);
            labels.push(format!("File: {base}"));
        }
        if !m.build_id.is_empty() {
            labels.push(format!("Build ID: {}", m.build_id));
        }
    }
    labels.extend(
        profile
            .comments
            .iter()
            .filter(|c| !c.starts_with('#'))
            .cloned(),
    );
    if !stacks.sample_type.kind.is_empty() {
        labels.push(format!("Type: {}", stacks.sample_type.kind));
    }
    if profile.duration_nanos != 0 {
        let duration = scaled_label(profile.duration_nanos, "nanoseconds", "auto");
        let (nanos, unit) = scale(total, &measure.sample_unit, "nanoseconds");
        let ratio = if unit == "ns" && nanos != 0.0 {
            format!("({})", percentage(nanos as i64, profile.duration_nanos))
        } else {
            String::new()
        };
        labels.push(format!(
            "Duration: {duration}, Total samples = {} {ratio}",
            measure.label(total)
        ));
    }
    let filters: Vec<String> = [
        ("focus", &options.focus),
        ("ignore", &options.ignore),
        ("hide", &options.hide),
        ("show", &options.show),
        ("show_from", &options.show_from),
        ("tagshow", &options.tags.show),
        ("taghide", &options.tags.hide),
    ]
    .into_iter()
    .filter_map(|(name, re)| re.as_ref().map(|re| format!("   {name}={re}")))
    .collect();
    if !filters.is_empty() {
        labels.push("Active filters:".to_string());
        labels.extend(filters);
    }
    labels
}

//! The static SVG flame graph: a standalone image with a `<title>` tooltip
//! per frame.

use std::fmt::Write;

use super::layout::*;
use super::{label, FlameOrientation, Page};

/// The frames drawn at the given width: those at least `min_px` wide,
/// in preorder, with the number of frames left out.
pub(super) struct Visible {
    pub frames: Vec<usize>,
    pub omitted: usize,
    pub max_depth: u32,
}

pub(super) fn visible(page: &Page, usable_px: f64) -> Visible {
    let nodes = page.tree.nodes();
    let root = page.tree.root_value();
    let mut frames = Vec::new();
    let mut omitted = 0;
    let mut max_depth = 0;
    if root <= 0 {
        return Visible {
            frames,
            omitted: nodes.len(),
            max_depth,
        };
    }
    let scale = usable_px / root as f64;
    let mut i = 0;
    while i < nodes.len() {
        let node = &nodes[i];
        if (node.value as f64) * scale < page.options.min_frame_px() {
            // Its descendants are narrower still.
            omitted += node.end as usize - i;
            i = node.end as usize;
            continue;
        }
        max_depth = max_depth.max(node.depth);
        frames.push(i);
        i += 1;
    }
    Visible {
        frames,
        omitted,
        max_depth,
    }
}

pub(super) fn render(page: &Page) -> String {
    let width = page.options.width_px.max(100) as f64;
    let usable = width - 2.0 * X_PAD;
    let shown = visible(page, usable);
    let rows = shown.max_depth as f64 + 1.0;
    let height = TOP + rows * FRAME_HEIGHT + BOTTOM;
    let scale = if page.tree.root_value() > 0 {
        usable / page.tree.root_value() as f64
    } else {
        0.0
    };

    let mut svg = String::with_capacity(256 + shown.frames.len() * 200);
    svg.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n");
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{width}\" \
         height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"{}\" \
         font-size=\"{FONT_SIZE}\">",
        xml(FONT_FAMILY)
    );
    let _ = writeln!(svg, "<title>{}</title>", xml(&page.input.title));
    svg.push_str("<style>g.frame:hover rect{stroke:#000;stroke-width:0.5}</style>\n");
    let _ = writeln!(
        svg,
        "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"16\" \
         font-family=\"sans-serif\">{}</text>",
        width / 2.0,
        xml(&page.input.title)
    );
    let mut subtitle = page.totals_line();
    let omitted = shown.omitted + page.tree.pruned();
    if omitted > 0 {
        let _ = write!(
            subtitle,
            "; {} frame{} narrower than {} px not drawn",
            omitted,
            if omitted == 1 { "" } else { "s" },
            page.options.min_frame_px()
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"40\" text-anchor=\"middle\" fill=\"#555555\" \
         font-family=\"sans-serif\">{}</text>",
        width / 2.0,
        xml(&subtitle)
    );
    svg.push_str("<g class=\"frames\">\n");
    let nodes = page.tree.nodes();
    for &i in &shown.frames {
        let node = &nodes[i];
        let x = X_PAD + node.start as f64 * scale;
        let w = node.value as f64 * scale;
        let row = match page.options.orientation {
            FlameOrientation::Flame => shown.max_depth - node.depth,
            FlameOrientation::Icicle => node.depth,
        };
        let y = TOP + row as f64 * FRAME_HEIGHT;
        let _ = write!(
            svg,
            "<g class=\"frame\"><title>{}</title><rect x=\"{x:.2}\" y=\"{y:.0}\" \
             width=\"{w:.2}\" height=\"{}\" rx=\"2\" fill=\"{}\"/>",
            xml(&page.tooltip(i)),
            FRAME_HEIGHT - 1.0,
            page.fill(i)
        );
        if let Some(text) = label(page.tree.name_of(i), w) {
            let _ = write!(
                svg,
                "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>",
                x + 3.0,
                y + FRAME_HEIGHT - 4.5,
                xml(&text)
            );
        }
        svg.push_str("</g>\n");
    }
    svg.push_str("</g>\n</svg>\n");
    svg
}

/// Escapes text for XML content and attributes; characters XML 1.0 cannot
/// carry at all (most C0 controls) become U+FFFD.
pub(super) fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

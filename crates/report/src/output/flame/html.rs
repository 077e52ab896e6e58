//! The interactive HTML flame graph: one self-contained page. The whole
//! tree is embedded as JSON and the embedded script draws the frames wide
//! enough to see at the current zoom as inline SVG, so zooming into a
//! frame reveals detail that was too narrow to draw at full view.

use std::fmt::Write;

use rayon::prelude::*;

use crate::measure::ValueFormat;

use super::layout::*;
use super::svg::xml;
use super::{FlameOrientation, Page};

const SCRIPT: &str = include_str!("flame.js");
/// Space above the frames: the page's header, outside the SVG, holds the
/// title and the totals.
const HTML_TOP: f64 = 4.0;
const STYLE: &str = include_str!("flame.css");

pub(super) fn render(page: &Page) -> String {
    let tree = page.tree;
    let mut html = String::with_capacity(4096 + tree.len() * 24 + tree.names().len() * 32);
    let title = xml(&page.input.title);
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(html, "<title>{title}</title>");
    // Recorded first, so that even a script that fails to parse is seen by
    // the self-test (which reads the attribute back from the DOM).
    html.push_str(
        "<script>window.addEventListener('error',function(e){var d=document.documentElement;\
         d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+\
         (e.message||'error')+' @'+(e.lineno||0)+';');});</script>\n",
    );
    let _ = writeln!(html, "<style>\n{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(html, "<header>\n<h1>{title}</h1>");
    let _ = writeln!(
        html,
        "<div id=\"totals\">{}</div>",
        xml(&page.totals_line())
    );
    html.push_str(
        "<div id=\"controls\">\
         <button id=\"reset\" type=\"button\" title=\"Show the whole graph (Esc)\">Reset zoom</button> \
         <input id=\"search\" type=\"search\" placeholder=\"Search: regular expression\" \
         title=\"Highlight the frames whose name matches (Ctrl+F)\" spellcheck=\"false\"> \
         <span id=\"matched\"></span>\
         </div>\n</header>\n",
    );
    html.push_str(
        "<div id=\"chart\"><svg id=\"flame\" xmlns=\"http://www.w3.org/2000/svg\"></svg></div>\n\
         <div id=\"status\"></div>\n<div id=\"tooltip\" hidden></div>\n\
         <noscript>This flame graph needs JavaScript; use the SVG output for a static image.</noscript>\n",
    );
    html.push_str("<script type=\"application/json\" id=\"flame-data\">");
    write_data(&mut html, page);
    html.push_str("</script>\n<script>\n");
    html.push_str(SCRIPT);
    html.push_str("</script>\n</body>\n</html>\n");
    html
}

/// How the page prints values (`values` in the data): the word after
/// counts, and for scaled values the units of their family (name, factor
/// in sample units) and the unit of values that fit none, or perl's fixed
/// divisor and decimals.
fn write_values(out: &mut String, values: &ValueFormat) {
    out.push_str(",\"values\":{\"word\":");
    json_string(out, values.word());
    if let Some((units, default)) = values.ladder() {
        out.push_str(",\"units\":[");
        for (i, (name, factor)) in units.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('[');
            json_string(out, name);
            let _ = write!(out, ",{factor}]");
        }
        out.push_str("],\"fallback\":[");
        json_string(out, default.0);
        let _ = write!(out, ",{}]", default.1);
    } else if let ValueFormat::Perl(perl) = values {
        let (divisor, decimals) = perl.divisor_and_decimals();
        let _ = write!(out, ",\"perl\":[{divisor},{decimals}]");
    }
    out.push('}');
}

/// The tree as JSON: names (sorted), palette, and per node in preorder
/// `name, value, depth, colour`; in a diff also the base per node.
fn write_data(out: &mut String, page: &Page) {
    let tree = page.tree;
    out.push('{');
    out.push_str("\"title\":");
    json_string(out, &page.input.title);
    write_values(out, &page.input.values);
    let _ = write!(out, ",\"total\":{}", page.input.total);
    let _ = write!(
        out,
        ",\"pruned\":{},\"prunedBelowPercent\":{}",
        tree.pruned(),
        page.options.prune_fraction() * 100.0
    );
    let _ = write!(
        out,
        ",\"layout\":{{\"xPad\":{X_PAD},\"frameHeight\":{FRAME_HEIGHT},\"fontSize\":{FONT_SIZE},\
         \"charWidth\":{CHAR_WIDTH},\"top\":{HTML_TOP},\"bottom\":{BOTTOM},\"minFramePx\":{},\
         \"icicle\":{},\"fontFamily\":",
        page.options.min_frame_px(),
        page.options.orientation == FlameOrientation::Icicle
    );
    json_string(out, FONT_FAMILY);
    out.push_str(",\"matchColor\":");
    json_string(out, MATCH_COLOR);
    out.push('}');
    if let Some(iv) = &page.options.intervals {
        let _ = write!(
            out,
            ",\"intervals\":{{\"samples\":{},\"scale\":{},\"z\":{},\"level\":\"{}\"}}",
            iv.samples,
            iv.scale,
            crate::stats::z_for(iv.level),
            crate::stats::level_text(iv.level)
        );
    }
    out.push_str(",\"names\":[");
    for (i, name) in tree.names().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string(out, name);
    }
    out.push_str("],\"palette\":[");
    for (i, colour) in page.palette.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string(out, colour);
    }
    out.push_str("],\"nodes\":[");
    // Millions of numbers on a big tree: written in parallel parts.
    let parts: Vec<String> = tree
        .nodes()
        .par_chunks(NODES_PER_PART)
        .enumerate()
        .map(|(part, nodes)| {
            let mut text = String::with_capacity(nodes.len() * 24);
            for (j, node) in nodes.iter().enumerate() {
                let i = part * NODES_PER_PART + j;
                if i > 0 {
                    text.push(',');
                }
                push_int(&mut text, node.name as i64);
                text.push(',');
                push_int(&mut text, node.value);
                text.push(',');
                push_int(&mut text, node.depth as i64);
                text.push(',');
                push_int(&mut text, page.node_color[i] as i64);
            }
            text
        })
        .collect();
    out.reserve(parts.iter().map(String::len).sum());
    for part in &parts {
        out.push_str(part);
    }
    out.push(']');
    if tree.is_diff() {
        out.push_str(",\"base\":[");
        for (i, node) in tree.nodes().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_int(out, node.base);
        }
        out.push(']');
    }
    out.push('}');
}

/// Appends `value` in decimal: `write!` costs several times more, and a
/// big tree has millions of numbers.
fn push_int(out: &mut String, value: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = value.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        out.push('-');
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// Nodes written per parallel part of the page's data.
const NODES_PER_PART: usize = 1 << 16;

/// A JSON string that cannot end the page's `<script>` element.
fn json_string(out: &mut String, text: &str) {
    crate::escape::push_json_string(out, text, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_written_in_decimal() {
        for value in [0, 7, 10, 1234567890, -5, i64::MAX, i64::MIN] {
            let mut out = String::new();
            push_int(&mut out, value);
            assert_eq!(out, value.to_string());
        }
    }

    #[test]
    fn json_strings_cannot_close_the_script() {
        let mut out = String::new();
        json_string(&mut out, "a</script><b>&\"\\\n\u{1}\u{2028}é");
        assert_eq!(
            out,
            "\"a\\u003c/script\\u003e\\u003cb\\u003e\\u0026\\\"\\\\\\n\\u0001\\u2028é\""
        );
    }
}

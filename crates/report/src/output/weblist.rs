//! `weblist RE`: the `--list` listings as one self-contained HTML page,
//! with each source line's instructions under it.
//!
//! Per function: a header (its name, its source file, its flat and cum),
//! then a table of the lines [`crate::output::listing::write`] prints (the function
//! with five lines of context either side): line number, flat, cum and the
//! source text. Lines with samples are tinted in proportion to their cum
//! (their share of the function's cum); each of them that has
//! instructions opens, as a `<details>` element, onto those instructions
//! (address, flat, cum, AT&T text). The hottest line of each function
//! starts open.
//!
//! The instructions of a line are those of the given disassemblies
//! ([`crate::instructions::disassemble`] of the same functions) whose innermost
//! source line is that line of the listing's file: the same attribution
//! as the listing's flat (an inlined callee's instructions go to the
//! callee's lines). Without disassemblies (no binary), lines show their
//! numbers only.
//!
//! The page needs nothing else: its CSS is inline, it has no script, and
//! every text from the profile or the sources is HTML-escaped.

use std::fmt::Write as _;
use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::instructions::{Disassembly, Instruction};
use crate::lines::{Listing, CONTEXT};
use crate::measure::ValueFormat;
use crate::source::SourceFiles;

/// The page's style sheet.
const STYLE: &str = "\
body { font-family: 'DejaVu Sans', sans-serif; margin: 1.5em; color: #1d1d1d; background: #fff; }
h1 { font-size: 1.3em; margin: 0 0 0.3em 0; }
p.help { color: #555; margin: 0 0 1.2em 0; }
section.routine { margin: 0 0 2em 0; border: 1px solid #ccc; border-radius: 4px; }
section.routine > header { background: #f2f2f2; padding: 0.5em 0.8em; border-bottom: 1px solid #ccc; }
section.routine h2 { font-family: 'DejaVu Sans Mono', monospace; font-size: 1.05em; margin: 0; }
.file { font-family: 'DejaVu Sans Mono', monospace; font-size: 0.85em; color: #444; }
.totals { font-size: 0.9em; margin-top: 0.2em; }
.missing { color: #a00; padding: 0.5em 0.8em; margin: 0; }
table.source { border-collapse: collapse; width: 100%; font-family: 'DejaVu Sans Mono', monospace; font-size: 13px; }
table.source th { text-align: right; font-weight: normal; color: #666; border-bottom: 1px solid #ddd; padding: 2px 8px; }
table.source th.text { text-align: left; }
table.source td { padding: 1px 8px; vertical-align: top; white-space: pre; }
td.num { text-align: right; color: #333; width: 4em; }
td.line { text-align: right; color: #888; width: 3em; }
tr.context td { color: #999; }
tr.first td { border-top: 1px dashed #bbb; }
tr.last td { border-bottom: 1px dashed #bbb; }
details > summary { cursor: pointer; list-style: none; }
details > summary::-webkit-details-marker { display: none; }
details > summary::before { content: '\\25B8 '; color: #a33; }
details[open] > summary::before { content: '\\25BE '; }
table.asm { border-collapse: collapse; margin: 2px 0 6px 1.2em; background: #fbfbf4; border-left: 3px solid #d9c77a; }
table.asm td { padding: 0 8px; font-size: 12px; }
td.addr { color: #46a; }
";

/// Writes one HTML page of `listings`; `title` heads the page (the
/// command, say); `values` prints the values and the word after the
/// totals (`samples`);
/// `disassemblies` are the instructions of the same functions (empty when
/// the binaries are not available); `sources` finds the source text. A
/// source file that cannot be found is named, with the lines that have
/// samples listed without their text.
pub fn write_html(
    out: &mut dyn Write,
    title: &str,
    listings: &[Listing],
    disassemblies: &[Disassembly],
    values: &ValueFormat,
    sources: &mut SourceFiles,
) -> io::Result<()> {
    // Instructions by (file, line), in address order within each binary.
    let mut by_line: FxHashMap<(&str, i64), Vec<&Instruction>> = FxHashMap::default();
    for d in disassemblies {
        for instruction in &d.instructions {
            by_line
                .entry((instruction.file.as_str(), i64::from(instruction.line)))
                .or_default()
                .push(instruction);
        }
    }
    let mut page = String::with_capacity(1 << 16);
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(page, "<title>{}</title>", escape(title));
    let _ = writeln!(page, "<style>\n{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(page, "<h1>{}</h1>", escape(title));
    page.push_str(
        "<p class=\"help\">Flat and cumulative values per source line. \
         Click a highlighted line to show or hide its instructions.</p>\n",
    );
    if listings.is_empty() {
        page.push_str("<p class=\"missing\">No function with samples matches.</p>\n");
    }
    for listing in listings {
        routine(&mut page, listing, &by_line, values, sources);
    }
    page.push_str("</body>\n</html>\n");
    out.write_all(page.as_bytes())
}

/// One function's section.
fn routine(
    page: &mut String,
    listing: &Listing,
    by_line: &FxHashMap<(&str, i64), Vec<&Instruction>>,
    values: &ValueFormat,
    sources: &mut SourceFiles,
) {
    let count = |v: i64| values.cell(v);
    let file = if listing.file.is_empty() {
        "??"
    } else {
        listing.file.as_str()
    };
    let _ = writeln!(
        page,
        "<section class=\"routine\">\n<header><h2>{}</h2>\n<div class=\"file\">{}</div>\n\
         <div class=\"totals\">{} / {} {} (flat / cumulative)</div></header>",
        escape(&listing.name),
        escape(file),
        count(listing.flat),
        count(listing.cum),
        escape(values.word())
    );
    let (first, last) = listing.range();
    let text = sources.lines(&listing.file);
    // The lines shown, with their text when the source was found.
    let mut shown: Vec<(i64, Option<&str>)> = Vec::new();
    match text {
        Some(text) if first > 0 => {
            let shown_first = (first - CONTEXT).max(1);
            let shown_last = (last + CONTEXT).min(text.len() as i64);
            for line in shown_first..=shown_last {
                shown.push((line, Some(text[(line - 1) as usize].as_str())));
            }
            for (&line, _) in listing.lines.range(shown_last + 1..) {
                shown.push((line, Some("(past the end of the source file)")));
            }
        }
        _ => {
            if listing.file.is_empty() {
                page.push_str(
                    "<p class=\"missing\">No source file is known for this function.</p>\n",
                );
            } else {
                let _ = writeln!(
                    page,
                    "<p class=\"missing\">Source file {} not found: see --source_path and --trim_path.</p>",
                    escape(&listing.file)
                );
            }
            shown.extend(listing.lines.range(1..).map(|(&line, _)| (line, None)));
        }
    }
    if listing.lines.contains_key(&0) {
        shown.push((0, Some("(no line information)")));
    }
    let hottest = listing
        .lines
        .iter()
        .max_by_key(|(&line, &(_, cum))| (cum.abs(), std::cmp::Reverse(line)))
        .map(|(&line, _)| line);
    page.push_str(
        "<table class=\"source\">\n<tr><th>line</th><th>flat</th><th>cum</th>\
         <th class=\"text\">source</th></tr>\n",
    );
    for (line, text) in shown {
        let (flat, cum) = listing.lines.get(&line).copied().unwrap_or_default();
        let mut class = Vec::new();
        if line > 0 && (line < first || line > last) {
            class.push("context");
        }
        if line == first {
            class.push("first");
        }
        if line == last {
            class.push("last");
        }
        let _ = write!(
            page,
            "<tr data-line=\"{line}\" data-flat=\"{flat}\" data-cum=\"{cum}\""
        );
        if !class.is_empty() {
            let _ = write!(page, " class=\"{}\"", class.join(" "));
        }
        if (flat != 0 || cum != 0) && listing.cum != 0 {
            // From a light to a strong tint as the line's share grows.
            let share = (cum.abs() as f64 / listing.cum.abs() as f64).min(1.0);
            let _ = write!(
                page,
                " style=\"background: rgba(230, 80, 40, {:.3})\"",
                0.08 + 0.55 * share
            );
        }
        let _ = write!(
            page,
            "><td class=\"line\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>",
            if line > 0 {
                line.to_string()
            } else {
                "??".to_string()
            },
            count(flat),
            count(cum)
        );
        let text = escape(text.unwrap_or(""));
        let instructions = by_line.get(&(listing.file.as_str(), line));
        match instructions {
            Some(instructions) if line > 0 && (flat != 0 || cum != 0) => {
                let open = if hottest == Some(line) { " open" } else { "" };
                let _ = write!(
                    page,
                    "<details{open}><summary>{text}</summary><table class=\"asm\">"
                );
                for i in instructions {
                    let _ = write!(
                        page,
                        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                         <td class=\"addr\">{:x}</td><td>{}</td></tr>",
                        count(i.flat),
                        count(i.cum),
                        i.address,
                        escape(&i.text)
                    );
                }
                page.push_str("</table></details>");
            }
            _ => page.push_str(&text),
        }
        page.push_str("</td></tr>\n");
    }
    page.push_str("</table>\n</section>\n");
}

/// `text` with HTML's special characters escaped, for element content and
/// attribute values alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("a < b && c > \"d\" 'e'"),
            "a &lt; b &amp;&amp; c &gt; &quot;d&quot; &#39;e&#39;"
        );
    }

    #[test]
    fn a_missing_source_names_its_path_and_keeps_the_numbers() {
        let mut listing = Listing {
            name: "f<int>".into(),
            function: "f<int>".into(),
            file: "/no/such/dir/f.cc".into(),
            start_line: 3,
            flat: 4,
            cum: 6,
            ..Listing::default()
        };
        listing.lines.insert(5, (4, 6));
        let mut out = Vec::new();
        let mut sources = SourceFiles::new(None, None);
        write_html(
            &mut out,
            "weblist f",
            &[listing],
            &[],
            &ValueFormat::count("samples"),
            &mut sources,
        )
        .unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(page.contains("<h2>f&lt;int&gt;</h2>"), "{page}");
        assert!(
            page.contains("Source file /no/such/dir/f.cc not found"),
            "{page}"
        );
        assert!(
            page.contains("<tr data-line=\"5\" data-flat=\"4\" data-cum=\"6\""),
            "{page}"
        );
    }
}

//! Human output: colour, aligned tables, rendered content blocks, media saved to files.

use std::io::{IsTerminal as _, Write};
use std::path::Path;

use mcp_types::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use super::media::{Media, Saved};

/// How stdout is written: colour only on a terminal and without `NO_COLOR`; tables fitted to the
/// terminal's width when there is one.
#[derive(Debug, Clone)]
pub(crate) struct Style {
    colour: bool,
    width: Option<usize>,
}

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";

impl Style {
    /// The style for stdout in this process.
    pub(crate) fn detect() -> Style {
        Style::for_stream(std::io::stdout().is_terminal())
    }

    /// The style for a stream that is (or is not) a terminal.
    pub(crate) fn for_stream(terminal: bool) -> Style {
        // https://no-color.org: any non-empty value turns colour off.
        let no_colour = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|w| *w > 0)
            .or_else(|| terminal.then(terminal_width).flatten());
        Style {
            colour: terminal && !no_colour,
            width,
        }
    }

    /// A style without colour or width, for tests.
    #[cfg(test)]
    pub(crate) fn plain(width: Option<usize>) -> Style {
        Style {
            colour: false,
            width,
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("{code}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }

    pub(crate) fn bold(&self, text: &str) -> String {
        self.paint(BOLD, text)
    }
    pub(crate) fn dim(&self, text: &str) -> String {
        self.paint(DIM, text)
    }
    pub(crate) fn red(&self, text: &str) -> String {
        self.paint(RED, text)
    }
    pub(crate) fn green(&self, text: &str) -> String {
        self.paint(GREEN, text)
    }
    pub(crate) fn yellow(&self, text: &str) -> String {
        self.paint(YELLOW, text)
    }
    pub(crate) fn cyan(&self, text: &str) -> String {
        self.paint(CYAN, text)
    }

    /// Lays out `rows` under `headers` in aligned columns. When the lines would be wider than the
    /// terminal, the columns after the first (which names the row) share what is left evenly, each
    /// cut with `…`; a column narrower than its share keeps its width and leaves the rest to the
    /// others.
    pub(crate) fn table(&self, headers: &[&str], rows: &[Vec<String>]) -> String {
        let columns = headers.len();
        let mut widths: Vec<usize> = headers.iter().map(|h| display_width(h)).collect();
        for row in rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(display_width(cell));
            }
        }
        if let Some(width) = self.width {
            fit(&mut widths, width);
        }
        let mut out = String::new();
        let mut line = |cells: Vec<String>, header: bool| {
            let mut text = String::new();
            for (i, cell) in cells.iter().enumerate().take(columns) {
                let cell = truncate(cell, widths[i]);
                text.push_str(&cell);
                if i + 1 < columns {
                    let pad = widths[i].saturating_sub(display_width(&cell));
                    text.push_str(&" ".repeat(pad + 2));
                }
            }
            let text = text.trim_end().to_owned();
            out.push_str(&if header { self.bold(&text) } else { text });
            out.push('\n');
        };
        line(headers.iter().map(|h| (*h).to_owned()).collect(), true);
        for row in rows {
            line(row.clone(), false);
        }
        out
    }
}

/// Narrows `widths` (two spaces between columns) to fit `width`: the first column keeps its
/// width; the others share the rest evenly, the narrow ones keeping theirs (at least one column
/// each, so a very narrow terminal may still overflow).
fn fit(widths: &mut [usize], width: usize) {
    let gaps = 2 * widths.len().saturating_sub(1);
    if widths.iter().sum::<usize>() + gaps <= width || widths.len() < 2 {
        return;
    }
    let mut room = width.saturating_sub(gaps + widths[0]);
    let mut open: Vec<usize> = (1..widths.len()).collect();
    // Water-filling: settle every column that fits in an even share, then share again.
    loop {
        let share = (room / open.len()).max(1);
        let (fits, wide): (Vec<usize>, Vec<usize>) =
            open.iter().partition(|&&i| widths[i] <= share);
        if fits.is_empty() {
            for &i in &wide {
                widths[i] = share;
            }
            // What the even split left over goes to the last columns, one each.
            let spare = room.saturating_sub(share * wide.len());
            for &i in wide.iter().rev().take(spare) {
                widths[i] += 1;
            }
            return;
        }
        for &i in &fits {
            room = room.saturating_sub(widths[i]);
        }
        open = wide;
        if open.is_empty() {
            return;
        }
    }
}

/// The width of the terminal on stdout, from the kernel.
#[cfg(unix)]
fn terminal_width() -> Option<usize> {
    let size = rustix::termios::tcgetwinsize(std::io::stdout()).ok()?;
    (size.ws_col > 0).then_some(usize::from(size.ws_col))
}

#[cfg(not(unix))]
fn terminal_width() -> Option<usize> {
    None
}

/// Characters, as a stand-in for display columns (good for the text a list shows).
pub(crate) fn display_width(text: &str) -> usize {
    text.chars().count()
}

/// Cuts `text` to `width` characters, ending in `…` when cut.
pub(crate) fn truncate(text: &str, width: usize) -> String {
    if display_width(text) <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The first line of an optional text, for one table cell.
pub(crate) fn first_line(text: Option<&str>) -> String {
    text.and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("")
        .to_owned()
}

/// Writes content blocks for a person: text as text, media saved to files, resources summarised.
pub(crate) fn render_blocks(
    out: &mut impl Write,
    style: &Style,
    media: &mut Media,
    stem: &str,
    blocks: &[ContentBlock],
) -> std::io::Result<()> {
    for block in blocks {
        match block {
            ContentBlock::Text(t) => {
                writeln!(out, "{}", t.text)?;
            }
            ContentBlock::Image(i) => {
                saved(out, style, media, stem, "image", &i.mime_type, &i.data)?
            }
            ContentBlock::Audio(a) => {
                saved(out, style, media, stem, "audio", &a.mime_type, &a.data)?
            }
            ContentBlock::ResourceLink(link) => {
                let mut line = format!("{} {}", style.cyan("[resource link]"), link.uri);
                let name = link.title.as_deref().unwrap_or(&link.name);
                line.push_str(&format!(" ({name}"));
                if let Some(mime) = &link.mime_type {
                    line.push_str(&format!(", {mime}"));
                }
                if let Some(size) = link.size {
                    line.push_str(&format!(", {size} bytes"));
                }
                line.push(')');
                writeln!(out, "{line}")?;
                if let Some(description) = &link.description {
                    writeln!(out, "  {}", style.dim(&first_line(Some(description))))?;
                }
            }
            ContentBlock::Resource(embedded) => {
                render_contents(
                    out,
                    style,
                    media,
                    stem,
                    std::slice::from_ref(&embedded.resource),
                    true,
                )?;
            }
        }
    }
    Ok(())
}

fn saved(
    out: &mut impl Write,
    style: &Style,
    media: &mut Media,
    stem: &str,
    kind: &str,
    mime: &str,
    data: &str,
) -> std::io::Result<()> {
    match media.save(stem, Some(mime), data) {
        Ok(saved) => writeln!(
            out,
            "{} {mime}, {} bytes, saved to {}{}",
            style.cyan(&format!("[{kind}]")),
            saved.len,
            saved.path.display(),
            kept(&saved)
        ),
        Err(e) => writeln!(
            out,
            "{} {mime}: not saved: {e}",
            style.cyan(&format!("[{kind}]"))
        ),
    }
}

/// Says which existing file a save did not overwrite.
fn kept(saved: &Saved) -> String {
    saved
        .taken
        .as_ref()
        .map(|name| format!(" ({name} exists and was kept)"))
        .unwrap_or_default()
}

/// Writes resource contents: a header per part when there are several (or for embedded ones),
/// text as text, binary saved to a file.
pub(crate) fn render_contents(
    out: &mut impl Write,
    style: &Style,
    media: &mut Media,
    stem: &str,
    contents: &[ResourceContents],
    embedded: bool,
) -> std::io::Result<()> {
    let headers = embedded || contents.len() > 1;
    for part in contents {
        let mime = part
            .mime_type()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        match part {
            ResourceContents::Text(t) => {
                if headers {
                    let label = if embedded { "[resource]" } else { "--" };
                    writeln!(out, "{} {}{mime}", style.cyan(label), t.uri)?;
                }
                writeln!(out, "{}", t.text)?;
            }
            ResourceContents::Blob(b) => {
                let label = if embedded { "[resource]" } else { "[binary]" };
                match media.save(stem, b.mime_type.as_deref(), &b.blob) {
                    Ok(saved) => writeln!(
                        out,
                        "{} {}{mime}, {} bytes, saved to {}{}",
                        style.cyan(label),
                        b.uri,
                        saved.len,
                        saved.path.display(),
                        kept(&saved)
                    )?,
                    Err(e) => {
                        writeln!(out, "{} {}{mime}: not saved: {e}", style.cyan(label), b.uri)?
                    }
                }
            }
        }
    }
    Ok(())
}

/// What `mcp call` shows of a result: the content blocks, and the structured content when it adds
/// something the text does not say. Servers usually repeat structured content as a JSON text block
/// (shown once, pretty), or render it as text (a query's table: the rows would be printed twice, so
/// the structured copy is left out unless `asked`); without any text block it is the result.
pub(crate) fn call_parts(
    result: &CallToolResult,
    asked: bool,
) -> (Vec<ContentBlock>, Option<&Value>) {
    let structured = result.structured_content.as_ref();
    let repeats = |block: &ContentBlock| {
        structured.is_some()
            && block
                .as_text()
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .as_ref()
                == structured
    };
    let shown: Vec<ContentBlock> = result
        .content
        .iter()
        .filter(|b| !repeats(b))
        .cloned()
        .collect();
    let has_text = shown.iter().any(|b| b.as_text().is_some());
    let structured = structured.filter(|_| asked || !has_text);
    (shown, structured)
}

/// Pretty JSON for a person.
pub(crate) fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// A file name stem for media from `name` (a tool, a URI).
pub(crate) fn stem_of(name: &str) -> String {
    let base = name
        .rsplit(['/', ':'])
        .find(|s| !s.is_empty())
        .unwrap_or(name);
    if base.is_empty() {
        "content".into()
    } else {
        base.to_owned()
    }
}

/// True when `dir` looks writable enough to be worth trying (used for a clear early error).
pub(crate) fn check_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("--save-dir {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::{ImageContent, TextResourceContents};

    #[test]
    fn tables_align_and_cut_the_last_column() {
        let style = Style::plain(Some(30));
        let rows = vec![
            vec!["a".into(), "short".into()],
            vec![
                "longer_name".into(),
                "a description that is far too long for thirty".into(),
            ],
        ];
        let text = style.table(&["NAME", "DESCRIPTION"], &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "NAME         DESCRIPTION");
        assert_eq!(lines[1], "a            short");
        assert!(lines[2].starts_with("longer_name  a description"));
        assert_eq!(lines[2].chars().count(), 30);
        assert!(lines[2].ends_with('…'));
        let wide = Style::plain(None).table(&["NAME", "DESCRIPTION"], &rows);
        assert!(wide.contains("far too long for thirty"));
    }

    #[test]
    fn wide_tables_share_the_room_after_the_first_column() {
        let rows = vec![vec![
            "a_tool_name".into(),
            "x*: string, y: integer, z: boolean".into(),
            "a description that is far too long".into(),
        ]];
        let text = Style::plain(Some(50)).table(&["NAME", "ARGUMENTS", "DESCRIPTION"], &rows);
        for line in text.lines() {
            assert!(line.chars().count() <= 50, "{line:?}");
        }
        let row = text.lines().nth(1).unwrap();
        // The name is whole; the other two got 17 and 18 columns.
        assert_eq!(row, "a_tool_name  x*: string, y: i…  a description tha…");
        // A narrow middle column keeps its width and leaves the rest to the last one.
        let rows = vec![vec![
            "a".into(),
            "b".into(),
            "a description that is far too long".into(),
        ]];
        let text = Style::plain(Some(30)).table(&["N", "A", "DESCRIPTION"], &rows);
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "a  b  a description that is f…"
        );
        let mut widths = vec![10, 3, 100, 100];
        fit(&mut widths, 40);
        assert_eq!(widths, vec![10, 3, 10, 11]);
        assert_eq!(widths.iter().sum::<usize>() + 6, 40);
    }

    #[test]
    fn truncation_and_first_lines() {
        assert_eq!(truncate("héllo", 5), "héllo");
        assert_eq!(truncate("héllo world", 6), "héllo…");
        assert_eq!(first_line(Some("\n  first\nsecond")), "first");
        assert_eq!(first_line(None), "");
        assert_eq!(stem_of("test://static-binary"), "static-binary");
        assert_eq!(stem_of("tool"), "tool");
    }

    #[test]
    fn structured_content_is_shown_when_it_adds_something() {
        let structured = serde_json::json!({"rows": [[1]]});
        let with = |content: Vec<ContentBlock>| CallToolResult {
            structured_content: Some(structured.clone()),
            ..CallToolResult::new(content)
        };
        // A text rendering (a table): the rows once, unless asked for.
        let table = with(vec![ContentBlock::text("n\n-\n1")]);
        let (shown, extra) = call_parts(&table, false);
        assert_eq!((shown.len(), extra), (1, None));
        assert_eq!(call_parts(&table, true).1, Some(&structured));
        // The same JSON as text: shown once, as structured content.
        let repeated = with(vec![ContentBlock::text(structured.to_string())]);
        let (shown, extra) = call_parts(&repeated, false);
        assert_eq!((shown.len(), extra), (0, Some(&structured)));
        // No text at all (only an image, or nothing): the structured content is the result.
        let image = with(vec![ContentBlock::Image(ImageContent::new(
            "aGk=",
            "image/png",
        ))]);
        assert_eq!(call_parts(&image, false).1, Some(&structured));
        assert_eq!(call_parts(&with(vec![]), false).1, Some(&structured));
        // Nothing structured: nothing to show.
        assert_eq!(call_parts(&CallToolResult::text("x"), true).1, None);
    }

    #[test]
    fn media_is_saved_and_text_is_printed() {
        let dir = std::env::temp_dir().join(format!("mcp-cli-unit-{}", std::process::id()));
        let mut media = Media::new(Some(dir.clone()));
        let mut out = Vec::new();
        let blocks = vec![
            ContentBlock::text("hello"),
            ContentBlock::Image(ImageContent::new("aGk=", "image/png")),
            ContentBlock::embedded(TextResourceContents::new("test://x", "inner")),
        ];
        render_blocks(&mut out, &Style::plain(None), &mut media, "t", &blocks).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("hello\n[image] image/png, 2 bytes, saved to "),
            "{text}"
        );
        assert!(text.contains("[resource] test://x\ninner\n"), "{text}");
        assert_eq!(std::fs::read(dir.join("t.png")).unwrap(), b"hi");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

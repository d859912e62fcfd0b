//! Human output: colour, aligned tables, rendered content blocks, media saved to files; and
//! [`clean`], which makes a server's text inert before it reaches the terminal.

use std::borrow::Cow;
use std::io::{IsTerminal as _, Write};
use std::path::Path;

use kelson_types::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use super::media::{Media, Saved};

/// Makes text from the server inert for a terminal, keeping its lines: `\n` and `\t` stay, a
/// `\r\n` line ending becomes `\n`, and every other character that a terminal acts on instead of
/// showing is replaced by a visible stand-in (see [`clean_line`] for one-line fields).
///
/// A server is not trusted with the terminal: an escape sequence in a tool's description or
/// result could recolour, move the cursor, clear the screen, set the window title, write the
/// clipboard (OSC 52) or hide a link (OSC 8); a carriage return or backspaces could overwrite what
/// was printed before them, and bidi controls could reorder a line, so that a prompt reads
/// differently from what it asks. The stand-ins:
///
/// - C0 controls and DEL become their Unicode Control Pictures (ESC `␛`, BEL `␇`, BS `␈`, CR `␍`,
///   NUL `␀`, DEL `␡`): one column each, so tables stay aligned, and plainly not text;
/// - C1 controls (U+0080-U+009F, which some terminals take as CSI and OSC), bidi controls and
///   other invisible format characters become `<U+202E>`: they have no picture, and the code point
///   says exactly what was sent.
///
/// Call it on the server's text before our own styling wraps it ([`Style`]), never on the result:
/// the styling's own escapes must go through. Text that needs nothing is returned as it is,
/// without a copy.
pub(crate) fn clean(text: &str) -> Cow<'_, str> {
    sanitize(text, true)
}

/// [`clean`] for a field shown on one line (a name, a title, a table cell, a URL, one of several
/// values each on its line): a line break becomes a visible `↵`, so that the field cannot start a
/// line of its own that looks like ours, and a tab becomes a space, so that it cannot break a
/// table's columns.
pub(crate) fn clean_line(text: &str) -> Cow<'_, str> {
    sanitize(text, false)
}

fn sanitize(text: &str, lines: bool) -> Cow<'_, str> {
    let changed = |c: char| is_unsafe(c) || (!lines && matches!(c, '\n' | '\t'));
    let Some(start) = text.find(changed) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..start]);
    let mut chars = text[start..].chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // A CR that ends a line is a Windows line ending, not an overwrite: the line break
            // that follows it is kept (or shown) on its own.
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' if !lines => out.push('↵'),
            '\t' if !lines => out.push(' '),
            '\n' | '\t' => out.push(c),
            '\u{0}'..='\u{1f}' => {
                out.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'))
            }
            '\u{7f}' => out.push('\u{2421}'),
            c if is_unsafe(c) => out.push_str(&format!("<U+{:04X}>", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether a terminal would act on `c` rather than show it, or `c` is invisible and can reorder
/// or hide the text around it. `\n` and `\t` count as safe here; the callers decide about them.
///
/// The zero-width joiner and non-joiner (U+200D, U+200C) are kept: emoji sequences and several
/// scripts need them, and they neither move nor hide other text. Variation selectors are kept for
/// the same reason.
fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        // C0 controls (ESC, BEL, BS, CR, ...) but the two kept, DEL, and the C1 controls.
        '\u{0}'..='\u{8}'
            | '\u{b}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            // Arabic letter mark, Mongolian vowel separator.
            | '\u{61c}'
            | '\u{180e}'
            // Zero width space, left-to-right and right-to-left marks.
            | '\u{200b}'
            | '\u{200e}'
            | '\u{200f}'
            // Line and paragraph separators: line breaks to Unicode, not to us.
            | '\u{2028}'
            | '\u{2029}'
            // Bidi embeddings and overrides (U+202E RIGHT-TO-LEFT OVERRIDE among them).
            | '\u{202a}'..='\u{202e}'
            // Word joiner and the invisible operators.
            | '\u{2060}'..='\u{2064}'
            // Bidi isolates, and the deprecated format controls after them.
            | '\u{2066}'..='\u{206f}'
            // Zero width no-break space (a byte order mark).
            | '\u{feff}'
            // Interlinear annotation controls, which some renderers use to hide text.
            | '\u{fff9}'..='\u{fffb}'
            // Tag characters: invisible, and a known way to smuggle text past a reader.
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// How stdout is written: colour only on a terminal and without `NO_COLOR`; tables fitted to the
/// terminal's width when there is one (`COLUMNS`, else the kernel's), and whole otherwise: output
/// piped to a file or another program keeps every value.
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
        let columns = || {
            std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.trim().parse::<usize>().ok())
                .filter(|w| *w > 0)
        };
        let width = terminal
            .then(|| columns().or_else(terminal_width))
            .flatten();
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

    /// This style without a width: tables keep every value whole (`--wide`).
    pub(crate) fn unbounded(mut self) -> Style {
        self.width = None;
        self
    }

    /// The width tables are fitted to, when there is one.
    pub(crate) fn width(&self) -> Option<usize> {
        self.width
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
    ///
    /// Every cell is the server's text (names, titles, descriptions, argument names), so each is
    /// cleaned as one line here, before it is measured: the headers are ours.
    pub(crate) fn table(&self, headers: &[&str], rows: &[Vec<String>]) -> String {
        let columns = headers.len();
        let rows: Vec<Vec<String>> = rows
            .iter()
            .map(|row| row.iter().map(|c| clean_line(c).into_owned()).collect())
            .collect();
        let mut widths: Vec<usize> = headers.iter().map(|h| display_width(h)).collect();
        for row in &rows {
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
            line(row, false);
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
                writeln!(out, "{}", clean(&t.text))?;
            }
            ContentBlock::Image(i) => {
                saved(out, style, media, stem, "image", &i.mime_type, &i.data)?
            }
            ContentBlock::Audio(a) => {
                saved(out, style, media, stem, "audio", &a.mime_type, &a.data)?
            }
            ContentBlock::ResourceLink(link) => {
                let mut line = format!(
                    "{} {}",
                    style.cyan("[resource link]"),
                    clean_line(&link.uri)
                );
                let name = link.title.as_deref().unwrap_or(&link.name);
                line.push_str(&format!(" ({}", clean_line(name)));
                if let Some(mime) = &link.mime_type {
                    line.push_str(&format!(", {}", clean_line(mime)));
                }
                if let Some(size) = link.size {
                    line.push_str(&format!(", {size} bytes"));
                }
                line.push(')');
                writeln!(out, "{line}")?;
                if let Some(description) = &link.description {
                    let description = first_line(Some(description));
                    writeln!(out, "  {}", style.dim(&clean_line(&description)))?;
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
    // The file's name is ours (media.rs keeps only letters, digits, `-` and `_` of the stem, and
    // picks the extension from a fixed list); the MIME type is the server's.
    let shown = clean_line(mime);
    match media.save(stem, Some(mime), data) {
        Ok(saved) => writeln!(
            out,
            "{} {shown}, {} bytes, saved to {}{}",
            style.cyan(&format!("[{kind}]")),
            saved.len,
            saved.path.display(),
            kept(&saved)
        ),
        Err(e) => writeln!(
            out,
            "{} {shown}: not saved: {}",
            style.cyan(&format!("[{kind}]")),
            clean_line(&e)
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
            .map(|m| format!(" ({})", clean_line(m)))
            .unwrap_or_default();
        match part {
            ResourceContents::Text(t) => {
                if headers {
                    let label = if embedded { "[resource]" } else { "--" };
                    writeln!(out, "{} {}{mime}", style.cyan(label), clean_line(&t.uri))?;
                }
                writeln!(out, "{}", clean(&t.text))?;
            }
            ResourceContents::Blob(b) => {
                let label = if embedded { "[resource]" } else { "[binary]" };
                let uri = clean_line(&b.uri);
                match media.save(stem, b.mime_type.as_deref(), &b.blob) {
                    Ok(saved) => writeln!(
                        out,
                        "{} {uri}{mime}, {} bytes, saved to {}{}",
                        style.cyan(label),
                        saved.len,
                        saved.path.display(),
                        kept(&saved)
                    )?,
                    Err(e) => writeln!(
                        out,
                        "{} {uri}{mime}: not saved: {}",
                        style.cyan(label),
                        clean_line(&e)
                    )?,
                }
            }
        }
    }
    Ok(())
}

/// What `kelson call` shows of a result: the content blocks, and the structured content when it adds
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

/// Pretty JSON for a person, cleaned: JSON escapes the C0 controls in strings, but not DEL, the
/// C1 controls or the bidi ones, which a terminal would still act on.
pub(crate) fn pretty(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    clean(&text).into_owned()
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
    use kelson_types::{ImageContent, TextResourceContents};

    /// Whether `text` holds anything a terminal would act on, or that hides or reorders text.
    fn inert(text: &str) -> bool {
        !text
            .chars()
            .any(|c| is_unsafe(c) || c == '\r' || c == '\u{1b}')
    }

    #[test]
    fn plain_text_is_untouched_and_not_copied() {
        // Accents, emoji joined with ZWJ, a right-to-left script, tabs and line breaks.
        let plain = "héllo wörld 👨\u{200d}👩\u{200d}👧 مرحبا नमस्\u{200d}ते\tcol\nnext line";
        assert!(matches!(clean(plain), Cow::Borrowed(t) if t == plain));
        let line = "a tool_name: résumé, 100% (ok) — “quoted” ✓";
        assert!(matches!(clean_line(line), Cow::Borrowed(t) if t == line));
        assert!(matches!(clean(""), Cow::Borrowed("")));
    }

    #[test]
    fn c0_controls_and_del_become_control_pictures() {
        for code in (0u32..0x20).filter(|c| ![0x09, 0x0a].contains(c)) {
            let c = char::from_u32(code).unwrap();
            let picture = char::from_u32(0x2400 + code).unwrap();
            assert_eq!(
                clean(&format!("a{c}b")),
                format!("a{picture}b"),
                "{code:#x}"
            );
            assert_eq!(
                clean_line(&format!("a{c}b")),
                format!("a{picture}b"),
                "{code:#x}"
            );
        }
        assert_eq!(clean("\x1b[31mred\x1b[0m"), "␛[31mred␛[0m");
        assert_eq!(clean("ding\x07"), "ding␇");
        assert_eq!(clean("abc\x08\x08\x08xyz"), "abc␈␈␈xyz");
        assert_eq!(clean("nul\0"), "nul␀");
        assert_eq!(clean("del\x7f"), "del␡");
    }

    #[test]
    fn c1_controls_become_code_points() {
        for code in 0x80u32..=0x9f {
            let c = char::from_u32(code).unwrap();
            assert_eq!(clean(&format!("a{c}b")), format!("a<U+{code:04X}>b"));
        }
        // U+009B is CSI on terminals that take 8-bit controls: "\u{9b}2J" clears the screen.
        assert_eq!(clean("\u{9b}2J"), "<U+009B>2J");
    }

    #[test]
    fn bidi_and_invisible_format_characters_become_code_points() {
        let hidden = [
            0x061c, 0x180e, 0x200b, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d,
            0x202e, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x2066, 0x2067, 0x2068, 0x2069, 0x206a,
            0x206f, 0xfeff, 0xfff9, 0xfffa, 0xfffb, 0xe0000, 0xe0041, 0xe007f,
        ];
        for code in hidden {
            let c = char::from_u32(code).unwrap();
            assert_eq!(clean(&format!("a{c}b")), format!("a<U+{code:04X}>b"));
        }
        // The classic: a file that reads as "invoice_fdp.exe" is "invoice_\u{202e}exe.pdf".
        assert_eq!(clean("invoice_\u{202e}exe.pdf"), "invoice_<U+202E>exe.pdf");
        // Joiners are kept: emoji and scripts need them, and they hide nothing.
        assert_eq!(clean("a\u{200c}b\u{200d}c"), "a\u{200c}b\u{200d}c");
    }

    #[test]
    fn carriage_returns_are_shown_unless_they_end_a_line() {
        // An overwrite: the terminal would show only "safe command".
        assert_eq!(clean("rm -rf ~\rsafe command"), "rm -rf ~␍safe command");
        // A Windows line ending is a line ending.
        assert_eq!(clean("one\r\ntwo\r\n"), "one\ntwo\n");
        assert_eq!(clean_line("one\r\ntwo"), "one↵two");
        assert_eq!(clean("\r\r\n"), "␍\n");
    }

    #[test]
    fn one_line_fields_show_line_breaks_and_flatten_tabs() {
        assert_eq!(clean_line("name\nfake row"), "name↵fake row");
        assert_eq!(clean_line("a\tb"), "a b");
        assert_eq!(clean_line("x\u{2028}y"), "x<U+2028>y");
        // Multi-line text keeps both.
        assert_eq!(clean("a\tb\nc"), "a\tb\nc");
    }

    #[test]
    fn terminal_attacks_are_made_inert() {
        let attacks = [
            // Clear the screen and home the cursor, then draw a fake prompt.
            "\x1b[2J\x1b[HApprove? [y/N]",
            // OSC 52: write the clipboard.
            "\x1b]52;c;cm0gLXJmIH4=\x07",
            // OSC 8: a link whose text is not where it goes.
            "\x1b]8;;https://evil.example\x1b\\https://good.example\x1b]8;;\x1b\\",
            // OSC 0: the window title.
            "\x1b]0;sudo password\x07",
            // Move the cursor up and erase the line printed before.
            "ok\x1b[1A\x1b[2K",
            // C1 forms of the same.
            "\u{9d}0;title\u{9c}\u{9b}2J",
        ];
        for attack in attacks {
            let cleaned = clean(attack);
            assert!(inert(&cleaned), "{attack:?} -> {cleaned:?}");
            // Cleaning twice changes nothing: the stand-ins are inert themselves.
            assert_eq!(clean(&cleaned), cleaned);
            assert_eq!(clean_line(&cleaned), cleaned);
        }
        assert_eq!(clean("\x1b]52;c;cm0gLXJmIH4=\x07"), "␛]52;c;cm0gLXJmIH4=␇");
    }

    #[test]
    fn our_styling_wraps_the_cleaned_text() {
        let style = Style {
            colour: true,
            width: None,
        };
        assert_eq!(
            style.red(&clean("\x1b[32mfine\x1b[0m")),
            "\x1b[31m␛[32mfine␛[0m\x1b[0m"
        );
    }

    #[test]
    fn table_cells_are_cleaned_and_stay_aligned() {
        let rows = vec![
            vec!["evil\x1b[2J".into(), "line\nbreak\tand \u{202e}txt".into()],
            vec!["ok".into(), "fine".into()],
        ];
        let text = Style::plain(None).table(&["NAME", "DESCRIPTION"], &rows);
        assert!(inert(&text), "{text:?}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[1], "evil␛[2J  line↵break and <U+202E>txt");
        assert_eq!(lines[2], "ok        fine");
    }

    #[test]
    fn rendered_content_is_cleaned() {
        let dir = std::env::temp_dir().join(format!("mcp-cli-unit-clean-{}", std::process::id()));
        let mut media = Media::new(Some(dir.clone()));
        let mut out = Vec::new();
        let blocks = vec![
            ContentBlock::text("first\x1b[2J\nsecond\x07"),
            ContentBlock::Image(ImageContent::new("aGk=", "image/png\x1b[8m")),
            ContentBlock::embedded(TextResourceContents::new("test://\u{202e}x", "in\rner")),
        ];
        render_blocks(&mut out, &Style::plain(None), &mut media, "t\x1b", &blocks).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(inert(&text), "{text:?}");
        assert!(text.starts_with("first␛[2J\nsecond␇\n"), "{text}");
        assert!(text.contains("[image] image/png␛[8m, 2 bytes"), "{text}");
        assert!(
            text.contains("[resource] test://<U+202E>x\nin␍ner\n"),
            "{text}"
        );
        // The file is named by us: the MIME type is not in the name, the stem lost its ESC.
        assert!(dir.join("t_.bin").exists());
        std::fs::remove_dir_all(dir).unwrap();
        let structured = serde_json::json!({"k": "\u{1b}[2J\u{202e}\u{9b}"});
        let shown = pretty(&structured);
        assert!(inert(&shown), "{shown:?}");
        assert!(
            shown.contains(r#""k": "\u001b[2J<U+202E><U+009B>""#),
            "{shown}"
        );
    }

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

//! Answering elicitations in the terminal: one prompt per field of the requested schema, with the
//! schema's checks, then the answer; URL elicitations ask for consent and never open the URL.
//!
//! Questions go to stderr (stdout keeps the result); answers are read line by line from stdin, so a
//! script can pipe them in: a form asks its fields straight away (`echo Ada | kelson call ...` fills
//! the first one). `:decline` or `:cancel` typed at any prompt answers that instead, and when the
//! input ends, the elicitation is cancelled.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

use kelson_types::{
    ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult, ElicitValue, NumberSchema,
    NumberType, PrimitiveSchemaDefinition as P, StringSchema,
};

use self::checks::{check_string, format_name, parse_number};
use super::output::{Style, clean, clean_line};

mod checks;

/// Reads answers from `input` and writes questions to `output`.
pub(crate) struct Asker<'a, R, W> {
    input: R,
    output: W,
    style: &'a Style,
    /// Whether to write each answer after its question (when the input is not a terminal that
    /// echoes it), so a transcript reads as a dialogue.
    echo: bool,
}

/// Why a form ended before its last field.
enum Stop {
    /// The input ended: cancel.
    Eof,
    /// The user typed `:decline`.
    Decline,
    /// The user typed `:cancel`.
    Cancel,
}

/// What to type at any prompt to decline or cancel instead of answering (also `:d` and `:c`).
const CONTROL_HINT: &str = "type :decline or :cancel at any prompt to answer that instead";

/// What was typed for a field.
enum Answer {
    /// The text, or the default when nothing was typed.
    Text(String),
    /// Nothing, for an optional field without a default.
    Skip,
}

/// One option of an enum field: the value sent and the label shown.
struct Choice {
    value: String,
    label: Option<String>,
}

impl<'a, R: BufRead, W: Write> Asker<'a, R, W> {
    pub(crate) fn new(input: R, output: W, style: &'a Style) -> Self {
        Asker {
            input,
            output,
            style,
            echo: false,
        }
    }

    /// Writes each answer read after its question.
    pub(crate) fn echo(mut self, echo: bool) -> Self {
        self.echo = echo;
        self
    }

    /// Reads one line without its line ending; `Err(Stop)` at the end of the input or for a
    /// control word (`:decline`, `:cancel`).
    fn line(&mut self) -> Result<String, Stop> {
        let _ = self.output.flush();
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) | Err(_) => Err(Stop::Eof),
            Ok(_) => {
                while line.ends_with(['\n', '\r']) {
                    line.pop();
                }
                if self.echo {
                    let _ = writeln!(self.output, "{line}");
                }
                match line.trim().to_ascii_lowercase().as_str() {
                    ":d" | ":decline" => Err(Stop::Decline),
                    ":c" | ":cancel" => Err(Stop::Cancel),
                    _ => Ok(line),
                }
            }
        }
    }

    fn say(&mut self, text: &str) {
        let _ = writeln!(self.output, "{text}");
    }

    fn ask(&mut self, question: &str) -> Result<String, Stop> {
        let _ = write!(self.output, "{question}");
        self.line()
    }

    fn complain(&mut self, problem: &str) {
        let text = self.style.red(&format!("  ! {problem}"));
        self.say(&text);
    }

    /// The form flow: the message, then each field in the server's order; filling them in is
    /// accepting, and `:decline` or `:cancel` at any prompt answers that instead.
    pub(crate) fn form(&mut self, params: &ElicitRequestFormParams) -> ElicitResult {
        match self.form_inner(params) {
            Ok(result) => result,
            Err(Stop::Eof) => {
                self.say("  (the input ended: the request is cancelled)");
                ElicitResult::cancel()
            }
            Err(Stop::Decline) => ElicitResult::decline(),
            Err(Stop::Cancel) => ElicitResult::cancel(),
        }
    }

    fn form_inner(&mut self, params: &ElicitRequestFormParams) -> Result<ElicitResult, Stop> {
        let schema = &params.requested_schema;
        let required = schema.required.as_deref().unwrap_or_default();
        let header = self.style.bold("The server asks:");
        self.say(&format!("\n{header} {}", clean(&params.message)));
        if schema.properties.is_empty() {
            // Nothing to fill in: the answer itself is the only question.
            loop {
                let answer = self.ask("  [a]ccept, [d]ecline or [c]ancel (default a)> ")?;
                match answer.trim().to_ascii_lowercase().as_str() {
                    "" | "a" | "accept" => return Ok(ElicitResult::accept(BTreeMap::new())),
                    "d" | "decline" => return Ok(ElicitResult::decline()),
                    "c" | "cancel" => return Ok(ElicitResult::cancel()),
                    _ => self.complain("type a, d or c"),
                }
            }
        }
        let names: Vec<String> = schema
            .properties
            .iter()
            .map(|(n, _)| {
                let star = if required.contains(n) { "*" } else { "" };
                format!("{}{star}", clean_line(n))
            })
            .collect();
        let fields = self.style.dim(&format!(
            "  fields: {} (* required); {CONTROL_HINT}",
            names.join(", ")
        ));
        self.say(&fields);
        let mut content = BTreeMap::new();
        for (name, field) in &schema.properties {
            let is_required = required.iter().any(|r| r == name);
            if let Some(value) = self.field(name, field, is_required)? {
                content.insert(name.clone(), value);
            }
        }
        Ok(ElicitResult::accept(content))
    }

    /// The URL flow: show the full URL and ask for consent; the URL is never opened here.
    pub(crate) fn url(&mut self, params: &ElicitRequestURLParams) -> ElicitResult {
        let header = self.style.bold("The server asks you to open a URL:");
        self.say(&format!("\n{header} {}", clean(&params.message)));
        // On one line, every character visible: a bidi override or a hidden character must not
        // make the URL read as another site's.
        let url = self.style.cyan(&clean_line(&params.url));
        self.say(&format!("  URL: {url}"));
        self.say("  (kelson does not open or fetch it: open it yourself if you trust it)");
        loop {
            let answer = match self
                .ask("Consent? [y]es I will open it, [n]o decline, [c]ancel (default n): ")
            {
                Ok(answer) => answer,
                Err(Stop::Decline) => return ElicitResult::decline(),
                Err(Stop::Cancel) => return ElicitResult::cancel(),
                Err(Stop::Eof) => {
                    self.say("  (the input ended: the request is cancelled)");
                    return ElicitResult::cancel();
                }
            };
            match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return ElicitResult::accept_url(),
                "" | "n" | "no" => return ElicitResult::decline(),
                "c" | "cancel" => return ElicitResult::cancel(),
                _ => self.complain("type y, n or c"),
            }
        }
    }

    /// Asks for one field until the answer passes its checks; `None` leaves an optional field out.
    fn field(
        &mut self,
        name: &str,
        field: &P,
        required: bool,
    ) -> Result<Option<ElicitValue>, Stop> {
        let (title, description) = labels(field);
        let label = title.unwrap_or(name);
        let mut heading = format!(
            "{}{}",
            self.style.bold(&clean_line(label)),
            if required { " *" } else { "" }
        );
        if title.is_some_and(|t| t != name) {
            heading.push_str(&self.style.dim(&format!(" ({})", clean_line(name))));
        }
        self.say(&heading);
        if let Some(description) = description {
            let text = self.style.dim(&format!("  {}", clean(description)));
            self.say(&text);
        }
        match field {
            P::String(s) => self.string(s, required),
            P::Number(n) => self.number(n, required),
            P::Boolean(b) => self.boolean(b.default, required),
            P::UntitledSingleSelectEnum(e) => {
                let choices = e.r#enum.iter().map(|v| Choice {
                    value: v.clone(),
                    label: None,
                });
                self.single(choices.collect(), e.default.as_deref(), required)
            }
            P::TitledSingleSelectEnum(e) => {
                let choices = e.one_of.iter().map(|o| Choice {
                    value: o.r#const.clone(),
                    label: Some(o.title.clone()),
                });
                self.single(choices.collect(), e.default.as_deref(), required)
            }
            P::LegacyTitledEnum(e) => {
                let names = e.enum_names.as_ref().filter(|n| n.len() == e.r#enum.len());
                let choices = e.r#enum.iter().enumerate().map(|(i, v)| Choice {
                    value: v.clone(),
                    label: names.map(|n| n[i].clone()),
                });
                self.single(choices.collect(), e.default.as_deref(), required)
            }
            P::UntitledMultiSelectEnum(e) => {
                let choices = e.items.r#enum.iter().map(|v| Choice {
                    value: v.clone(),
                    label: None,
                });
                self.multi(
                    choices.collect(),
                    e.default.as_deref(),
                    (e.min_items, e.max_items),
                    required,
                )
            }
            P::TitledMultiSelectEnum(e) => {
                let choices = e.items.any_of.iter().map(|o| Choice {
                    value: o.r#const.clone(),
                    label: Some(o.title.clone()),
                });
                self.multi(
                    choices.collect(),
                    e.default.as_deref(),
                    (e.min_items, e.max_items),
                    required,
                )
            }
        }
    }

    /// Reads an answer: text, or (when empty) the default, or leaving an optional field out; a
    /// required field without a default is asked again.
    fn read(&mut self, hint: &str, default: Option<&str>, required: bool) -> Result<Answer, Stop> {
        let default_text = default
            .map(|d| format!(" (default {})", clean_line(d)))
            .unwrap_or_default();
        loop {
            let answer = self.ask(&format!("  {hint}{default_text}> "))?;
            if !answer.trim().is_empty() {
                return Ok(Answer::Text(answer));
            }
            if let Some(default) = default {
                return Ok(Answer::Text(default.to_owned()));
            }
            if !required {
                return Ok(Answer::Skip);
            }
            self.complain("this field is required");
        }
    }

    fn string(&mut self, s: &StringSchema, required: bool) -> Result<Option<ElicitValue>, Stop> {
        let mut hint = vec!["text".to_owned()];
        if let Some(format) = &s.format {
            hint.push(format_name(format).to_owned());
        }
        match (s.min_length, s.max_length) {
            (Some(min), Some(max)) => hint.push(format!("{min}-{max} characters")),
            (Some(min), None) => hint.push(format!("at least {min} characters")),
            (None, Some(max)) => hint.push(format!("at most {max} characters")),
            (None, None) => {}
        }
        let hint = format!("[{}]", hint.join(", "));
        loop {
            let Answer::Text(answer) = self.read(&hint, s.default.as_deref(), required)? else {
                return Ok(None);
            };
            match check_string(s, &answer) {
                Ok(()) => return Ok(Some(ElicitValue::String(answer))),
                Err(problem) => self.complain(&problem),
            }
        }
    }

    fn number(&mut self, n: &NumberSchema, required: bool) -> Result<Option<ElicitValue>, Stop> {
        let integer = n.r#type == NumberType::Integer;
        let kind = if integer { "integer" } else { "number" };
        let range = match (n.minimum, n.maximum) {
            (Some(min), Some(max)) => format!(", {min} to {max}"),
            (Some(min), None) => format!(", at least {min}"),
            (None, Some(max)) => format!(", at most {max}"),
            (None, None) => String::new(),
        };
        let hint = format!("[{kind}{range}]");
        let default = n.default.map(|d| d.to_string());
        loop {
            let Answer::Text(answer) = self.read(&hint, default.as_deref(), required)? else {
                return Ok(None);
            };
            match parse_number(n, answer.trim()) {
                Ok(value) => return Ok(Some(ElicitValue::Number(value))),
                Err(problem) => self.complain(&problem),
            }
        }
    }

    fn boolean(
        &mut self,
        default: Option<bool>,
        required: bool,
    ) -> Result<Option<ElicitValue>, Stop> {
        let hint = match default {
            Some(true) => "[Y/n]",
            Some(false) => "[y/N]",
            None => "[y/n]",
        };
        loop {
            let answer = self.ask(&format!("  {hint}> "))?;
            match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => return Ok(Some(ElicitValue::Boolean(true))),
                "n" | "no" | "false" | "0" => return Ok(Some(ElicitValue::Boolean(false))),
                "" if default.is_some() => return Ok(default.map(ElicitValue::Boolean)),
                "" if !required => return Ok(None),
                "" => self.complain("this field is required"),
                _ => self.complain("type y or n"),
            }
        }
    }

    fn list_choices(&mut self, choices: &[Choice]) {
        for (i, choice) in choices.iter().enumerate() {
            // Shown cleaned; what is sent back is the value as the server gave it.
            let value = clean_line(&choice.value);
            let text = match &choice.label {
                Some(label) if *label != choice.value => {
                    format!(
                        "    {}) {} {}",
                        i + 1,
                        clean_line(label),
                        self.style.dim(&format!("[{value}]"))
                    )
                }
                _ => format!("    {}) {value}", i + 1),
            };
            self.say(&text);
        }
    }

    fn single(
        &mut self,
        choices: Vec<Choice>,
        default: Option<&str>,
        required: bool,
    ) -> Result<Option<ElicitValue>, Stop> {
        self.list_choices(&choices);
        let hint = format!("[choose 1-{}]", choices.len());
        loop {
            let Answer::Text(answer) = self.read(&hint, default, required)? else {
                return Ok(None);
            };
            match pick(&choices, answer.trim()) {
                Some(value) => return Ok(Some(ElicitValue::String(value))),
                None => self.complain(&format!("choose a number from 1 to {}", choices.len())),
            }
        }
    }

    fn multi(
        &mut self,
        choices: Vec<Choice>,
        default: Option<&[String]>,
        (min, max): (Option<u64>, Option<u64>),
        required: bool,
    ) -> Result<Option<ElicitValue>, Stop> {
        self.list_choices(&choices);
        let mut hint = format!("[choose any of 1-{}, separated by commas", choices.len());
        match (min, max) {
            (Some(min), Some(max)) => hint.push_str(&format!("; {min} to {max} of them")),
            (Some(min), None) => hint.push_str(&format!("; at least {min}")),
            (None, Some(max)) => hint.push_str(&format!("; at most {max}")),
            (None, None) => {}
        }
        hint.push(']');
        let default_text = default.map(|d| d.join(","));
        loop {
            let Answer::Text(answer) = self.read(&hint, default_text.as_deref(), required)? else {
                return Ok(None);
            };
            let mut values: Vec<String> = Vec::new();
            let mut bad = None;
            for part in answer
                .split([',', ' '])
                .map(str::trim)
                .filter(|p| !p.is_empty())
            {
                match pick(&choices, part) {
                    Some(v) if !values.contains(&v) => values.push(v),
                    Some(_) => {}
                    None => bad = Some(part.to_owned()),
                }
            }
            if let Some(bad) = bad {
                self.complain(&format!("{bad:?} is not one of the choices"));
                continue;
            }
            let n = values.len() as u64;
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                self.complain(&format!(
                    "choose between {} and {} options",
                    min.unwrap_or(0),
                    max.map_or("any number of".to_owned(), |m| m.to_string())
                ));
                continue;
            }
            return Ok(Some(ElicitValue::StringArray(values)));
        }
    }
}

/// The title and description of a field.
fn labels(field: &P) -> (Option<&str>, Option<&str>) {
    let (title, description) = match field {
        P::String(s) => (&s.title, &s.description),
        P::Number(s) => (&s.title, &s.description),
        P::Boolean(s) => (&s.title, &s.description),
        P::UntitledSingleSelectEnum(s) => (&s.title, &s.description),
        P::TitledSingleSelectEnum(s) => (&s.title, &s.description),
        P::UntitledMultiSelectEnum(s) => (&s.title, &s.description),
        P::TitledMultiSelectEnum(s) => (&s.title, &s.description),
        P::LegacyTitledEnum(s) => (&s.title, &s.description),
    };
    (title.as_deref(), description.as_deref())
}

/// An option by its number (1-based), its value, or its label (ignoring case).
fn pick(choices: &[Choice], answer: &str) -> Option<String> {
    if let Ok(n) = answer.parse::<usize>()
        && (1..=choices.len()).contains(&n)
    {
        return Some(choices[n - 1].value.clone());
    }
    choices
        .iter()
        .find(|c| c.value == answer)
        .or_else(|| {
            choices.iter().find(|c| {
                c.label
                    .as_deref()
                    .is_some_and(|l| l.eq_ignore_ascii_case(answer))
                    || c.value.eq_ignore_ascii_case(answer)
            })
        })
        .map(|c| c.value.clone())
}

/// Writes a note to stderr for an elicitation declined without asking (`--no-input`): the
/// server's message, and the URL of a URL elicitation.
pub(crate) fn note_declined(style: &Style, message: &str, url: Option<&str>) {
    let url = url
        .map(|u| format!(" ({})", clean_line(u)))
        .unwrap_or_default();
    let mut err = io::stderr();
    let _ = writeln!(
        err,
        "{} {}{url}",
        style.yellow("elicitation declined (--no-input):"),
        clean(message)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use kelson_types::{
        BooleanSchema, ElicitAction, EnumOption, RequestedSchema, StringFormat,
        TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, UntitledSingleSelectEnumSchema,
    };
    use serde_json::json;

    fn run_form(params: &ElicitRequestFormParams, input: &str) -> (ElicitResult, String) {
        let style = Style::plain(None);
        let mut out = Vec::new();
        let result = Asker::new(input.as_bytes(), &mut out, &style).form(params);
        (result, String::from_utf8(out).unwrap())
    }

    fn content(result: &ElicitResult) -> serde_json::Value {
        serde_json::to_value(result.content.clone().unwrap_or_default()).unwrap()
    }

    fn rich() -> ElicitRequestFormParams {
        let mut email = StringSchema::new().with_format(StringFormat::Email);
        email.min_length = Some(5);
        let mut nick = StringSchema::new().with_title("Nickname");
        nick.default = Some("anon".into());
        let mut age = NumberSchema::integer().with_range(Some(0.0), Some(150.0));
        age.default = None;
        let mut colour = UntitledSingleSelectEnumSchema::new(vec!["red".into(), "green".into()]);
        colour.default = Some("green".into());
        let size = TitledSingleSelectEnumSchema::new(vec![
            EnumOption::new("s", "Small"),
            EnumOption::new("l", "Large"),
        ]);
        let mut toppings = TitledMultiSelectEnumSchema::new(vec![
            EnumOption::new("ham", "Ham"),
            EnumOption::new("egg", "Egg"),
            EnumOption::new("olive", "Olive"),
        ]);
        toppings.max_items = Some(2);
        ElicitRequestFormParams::new(
            "Order a pizza",
            RequestedSchema::new()
                .required_property("email", email)
                .property("nick", nick)
                .required_property("age", age)
                .property("colour", colour)
                .required_property("size", size)
                .property("toppings", toppings)
                .property("extra", BooleanSchema::new()),
        )
    }

    #[test]
    fn a_form_with_every_kind_of_field() {
        // email: invalid, too short, then good; nick: default; age: not a number, out of
        // range, then 42; colour: default; size: by label; toppings: three (too many) then 1,3;
        // extra: y.
        let input = "not-an-email\na@b\nme@example.com\n\nabc\n200\n42\n\nlarge\n1,2,3\n1, 3\ny\n";
        let (result, transcript) = run_form(&rich(), input);
        assert_eq!(result.action, ElicitAction::Accept, "{transcript}");
        assert_eq!(
            content(&result),
            json!({
                "email": "me@example.com", "nick": "anon", "age": 42, "colour": "green",
                "size": "l", "toppings": ["ham", "olive"], "extra": true
            })
        );
        assert!(transcript.contains("The server asks: Order a pizza"));
        assert!(
            transcript.contains(
                "fields: email*, nick, age*, colour, size*, toppings, extra (* required); \
                 type :decline or :cancel"
            ),
            "{transcript}"
        );
        assert!(transcript.contains("not a valid email"));
        assert!(transcript.contains("at least 5 characters"));
        assert!(transcript.contains("is not a whole number"));
        assert!(transcript.contains("at most 150"));
        assert!(transcript.contains("(default anon)"));
        assert!(transcript.contains("1) Small [s]"));
        assert!(transcript.contains("choose between 0 and 2 options"));
    }

    #[test]
    fn required_fields_are_enforced_and_optional_ones_skipped() {
        let params = ElicitRequestFormParams::new(
            "?",
            RequestedSchema::new()
                .required_property("name", StringSchema::new())
                .property("note", StringSchema::new())
                .property("ok", BooleanSchema::new()),
        );
        let (result, transcript) = run_form(&params, "\n\nbob\n\n\n");
        assert_eq!(content(&result), json!({"name": "bob"}));
        assert!(transcript.contains("this field is required"));
    }

    #[test]
    fn decline_cancel_and_end_of_input() {
        let params = rich();
        assert_eq!(
            run_form(&params, ":decline\n").0.action,
            ElicitAction::Decline
        );
        assert_eq!(run_form(&params, " :D \n").0.action, ElicitAction::Decline);
        assert_eq!(
            run_form(&params, ":cancel\n").0.action,
            ElicitAction::Cancel
        );
        // At any field, not only the first.
        assert_eq!(
            run_form(&params, "me@example.com\n\n:decline\n").0.action,
            ElicitAction::Decline
        );
        assert_eq!(
            run_form(&params, "me@example.com\n:c\n").0.action,
            ElicitAction::Cancel
        );
        // The input ends mid-form, or at once.
        let (result, transcript) = run_form(&params, "me@example.com\n");
        assert_eq!(result.action, ElicitAction::Cancel);
        assert!(transcript.contains("the input ended"), "{transcript}");
        assert_eq!(run_form(&params, "").0.action, ElicitAction::Cancel);
        // An answer that only looks like a word is a value: "d" is a valid nickname.
        let named = ElicitRequestFormParams::new(
            "?",
            RequestedSchema::new().required_property("name", StringSchema::new()),
        );
        assert_eq!(content(&run_form(&named, "d\n").0), json!({"name": "d"}));
    }

    #[test]
    fn a_form_without_fields_asks_for_the_answer_alone() {
        let empty = ElicitRequestFormParams::new("Continue?", RequestedSchema::new());
        let (result, transcript) = run_form(&empty, "\n");
        assert_eq!(result.action, ElicitAction::Accept);
        assert_eq!(content(&result), json!({}));
        assert!(
            transcript.contains("[a]ccept, [d]ecline or [c]ancel"),
            "{transcript}"
        );
        assert_eq!(run_form(&empty, "d\n").0.action, ElicitAction::Decline);
        assert_eq!(run_form(&empty, "what\nc\n").0.action, ElicitAction::Cancel);
        assert_eq!(
            run_form(&empty, ":decline\n").0.action,
            ElicitAction::Decline
        );
        assert_eq!(run_form(&empty, "").0.action, ElicitAction::Cancel);
    }

    #[test]
    fn a_hostile_form_is_shown_inert_and_answered_with_the_raw_values() {
        let mut name = StringSchema::new().with_title("Name\x1b[8m hidden\x1b[0m");
        name.description = Some("Type it\r\x1b[2KApprove? \u{202e}".into());
        name.default = Some("anon\x07".into());
        let size = TitledSingleSelectEnumSchema::new(vec![
            EnumOption::new("s\x1b[31m", "Small\u{9b}2J"),
            EnumOption::new("l", "Large\nfake line"),
        ]);
        let params = ElicitRequestFormParams::new(
            "Pay \x1b]8;;https://evil.example\x07here\x1b]8;;\x07\x1b]52;c;eA==\x07",
            RequestedSchema::new()
                .property("name\x1b[2J", name)
                .required_property("size", size),
        );
        let (result, transcript) = run_form(&params, "\n1\n");
        for c in ['\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}'] {
            assert!(!transcript.contains(c), "{c:?} in {transcript:?}");
        }
        assert!(
            transcript
                .contains("The server asks: Pay ␛]8;;https://evil.example␇here␛]8;;␇␛]52;c;eA==␇"),
            "{transcript}"
        );
        assert!(
            transcript.contains("fields: name␛[2J, size*"),
            "{transcript}"
        );
        assert!(
            transcript.contains("Name␛[8m hidden␛[0m (name␛[2J)"),
            "{transcript}"
        );
        assert!(
            transcript.contains("  Type it␍␛[2KApprove? <U+202E>"),
            "{transcript}"
        );
        assert!(transcript.contains("(default anon␇)"), "{transcript}");
        assert!(
            transcript.contains("1) Small<U+009B>2J [s␛[31m]"),
            "{transcript}"
        );
        assert!(
            transcript.contains("2) Large↵fake line [l]"),
            "{transcript}"
        );
        // Only the display is cleaned: the answer carries the server's values as they were.
        assert_eq!(
            content(&result),
            json!({"name\u{1b}[2J": "anon\u{7}", "size": "s\u{1b}[31m"})
        );
    }

    #[test]
    fn a_url_cannot_pass_for_another_one() {
        let style = Style::plain(None);
        let params = ElicitRequestURLParams::new(
            "Sign in\x1b[2K",
            "https://evil.example/\u{202e}moc.elpmaxe.doog//:sptth\nURL: https://good.example",
        );
        let mut out = Vec::new();
        Asker::new("n\n".as_bytes(), &mut out, &style).url(&params);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(
                "URL: https://evil.example/<U+202E>moc.elpmaxe.doog//:sptth↵URL: \
                 https://good.example\n"
            ),
            "{text}"
        );
        assert!(text.contains("Sign in␛[2K"), "{text}");
        // The URL's line break is shown: no second "URL:" line.
        let lines = text.lines().filter(|l| l.trim_start().starts_with("URL: "));
        assert_eq!(lines.count(), 1, "{text}");
    }

    #[test]
    fn urls_need_consent_and_are_shown_whole() {
        let style = Style::plain(None);
        let params = ElicitRequestURLParams::new("Sign in", "https://example.com/auth?x=1&y=2");
        for (input, action) in [
            ("y\n", ElicitAction::Accept),
            ("\n", ElicitAction::Decline),
            ("what\nc\n", ElicitAction::Cancel),
            (":cancel\n", ElicitAction::Cancel),
            ("", ElicitAction::Cancel),
        ] {
            let mut out = Vec::new();
            let result = Asker::new(input.as_bytes(), &mut out, &style).url(&params);
            assert_eq!(result.action, action, "{input:?}");
            let text = String::from_utf8(out).unwrap();
            assert!(
                text.contains("URL: https://example.com/auth?x=1&y=2"),
                "{text}"
            );
        }
    }
}

//! Putting a question from the middle of a call (a remote MCP server's
//! elicitation, rule N7) to the person at the terminal: the elicitor of
//! `toolhost call` and `toolhost agent`.
//!
//! It asks on the controlling terminal (`/dev/tty`), as the approver does
//! ([`approve`](crate::approve)), and shares its turn, so questions and
//! approvals never interleave. The person first chooses to answer, decline
//! or cancel; answering shows the form's fields one at a time — text,
//! numbers, yes-or-no, a choice among options, several choices — with
//! their defaults (Enter takes the default) and whether they are required,
//! and reads each answer until it fits. With no controlling terminal, no
//! one can be asked, and the asker is told so.
//!
//! Everything shown comes from the server that asks, so every control
//! character in it is shown escaped: a server cannot move the cursor,
//! clear the screen or forge toolhost's own prompts.

use std::io;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use toolhost::tool::elicitation::{
    ElicitationAnswer, ElicitationError, ElicitationRequest, Elicitor,
};

use crate::approve::{Turn, ask};

/// Longest excerpt of the asker's message shown.
const SHOWN_MESSAGE: usize = 4000;

/// Longest title, description or option shown.
const SHOWN_TEXT: usize = 400;

/// Most fields a form may have to be shown.
const MAX_FIELDS: usize = 64;

/// Most options a choice may have to be shown.
const MAX_OPTIONS: usize = 256;

/// Asks the person at the terminal, one question at a time.
pub(crate) struct TerminalElicitor {
    turn: Turn,
}

impl TerminalElicitor {
    /// An elicitor taking turns on the terminal with whatever shares `turn`.
    pub(crate) fn new(turn: Turn) -> Arc<Self> {
        Arc::new(Self { turn })
    }
}

#[async_trait]
impl Elicitor for TerminalElicitor {
    async fn elicit(
        &self,
        request: &ElicitationRequest,
    ) -> Result<ElicitationAnswer, ElicitationError> {
        let form = Form::parse(&request.requested_schema).map_err(ElicitationError::Failed)?;
        let _turn = self.turn.lock().await;
        let mut terminal = Terminal;
        put(&mut terminal, request, &form)
            .await
            .map_err(|e| match e {
                e if e.kind() == io::ErrorKind::UnexpectedEof => {
                    ElicitationError::Failed("the terminal closed before an answer came".into())
                }
                _ => ElicitationError::NoOneToAsk(
                    "there is no terminal to ask (toolhost asks the person at its controlling \
                 terminal)"
                        .into(),
                ),
            })
    }
}

/// Where questions go and answers come from: the terminal, or a script in
/// the tests.
#[async_trait]
trait Lines: Send {
    /// Shows `prompt` and reads one line.
    async fn ask(&mut self, prompt: &str) -> io::Result<String>;
}

/// The controlling terminal.
struct Terminal;

#[async_trait]
impl Lines for Terminal {
    async fn ask(&mut self, prompt: &str) -> io::Result<String> {
        ask(prompt).await
    }
}

/// Shows the question, then reads the person's choice and the form.
async fn put(
    lines: &mut dyn Lines,
    request: &ElicitationRequest,
    form: &Form,
) -> io::Result<ElicitationAnswer> {
    let mut intro = format!(
        "\n{} asks: {}\n",
        printable(&request.asked_by, SHOWN_TEXT),
        printable(&request.message, SHOWN_MESSAGE)
    );
    loop {
        intro.push_str("Answer it? [a]nswer, [d]ecline or [c]ancel > ");
        let choice = lines.ask(&intro).await?;
        intro.clear();
        match choice.trim().to_ascii_lowercase().as_str() {
            "a" | "answer" | "accept" => break,
            "d" | "decline" => return Ok(ElicitationAnswer::Decline),
            "c" | "cancel" => return Ok(ElicitationAnswer::Cancel),
            _ => intro.push_str("  Type a, d or c.\n"),
        }
    }
    let mut content = Map::new();
    for field in &form.fields {
        let mut prompt = field.prompt();
        loop {
            let line = lines.ask(&prompt).await?;
            match field.read(&line) {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                    break;
                }
                Ok(None) => break,
                Err(why) => prompt = format!("  {why}\n{}", field.prompt()),
            }
        }
    }
    Ok(ElicitationAnswer::Accept(Value::Object(content)))
}

/// A form as MCP elicitation defines it: an object of flat fields.
#[derive(Debug)]
struct Form {
    fields: Vec<Field>,
}

/// One field of a form.
#[derive(Debug)]
struct Field {
    name: String,
    title: Option<String>,
    description: Option<String>,
    required: bool,
    default: Option<Value>,
    kind: Kind,
}

/// A choice's options: each value, with its title if it has one.
type Options = Vec<(String, Option<String>)>;

/// What a field holds.
#[derive(Debug)]
enum Kind {
    Text {
        min: Option<u64>,
        max: Option<u64>,
        format: Option<String>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    YesNo,
    /// One of the options.
    OneOf(Options),
    /// Several of the options.
    ManyOf {
        options: Options,
        min: Option<u64>,
        max: Option<u64>,
    },
}

impl Form {
    /// The form `schema` describes, or why it cannot be shown.
    fn parse(schema: &Value) -> Result<Self, String> {
        let properties = match schema.get("properties") {
            None => return Ok(Self { fields: Vec::new() }),
            Some(Value::Object(p)) => p,
            Some(_) => return Err("the form's `properties` is not an object".into()),
        };
        if properties.len() > MAX_FIELDS {
            return Err(format!(
                "the form has {} fields; toolhost shows at most {MAX_FIELDS}",
                properties.len()
            ));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields = properties
            .iter()
            .map(|(name, property)| Field::parse(name, property, required.contains(&&**name)))
            .collect::<Result<_, _>>()?;
        Ok(Self { fields })
    }
}

impl Field {
    fn parse(name: &str, p: &Value, required: bool) -> Result<Self, String> {
        let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_owned);
        let count = |key: &str| p.get(key).and_then(Value::as_u64);
        let number = |key: &str| p.get(key).and_then(Value::as_f64);
        let kind = match p.get("type").and_then(Value::as_str) {
            Some("string") => match options(p) {
                Some(options) => Kind::OneOf(options?),
                None => Kind::Text {
                    min: count("minLength"),
                    max: count("maxLength"),
                    format: text("format"),
                },
            },
            Some(t @ ("number" | "integer")) => Kind::Number {
                integer: t == "integer",
                min: number("minimum"),
                max: number("maximum"),
            },
            Some("boolean") => Kind::YesNo,
            Some("array") => {
                let items = p.get("items").unwrap_or(&Value::Null);
                match options(items) {
                    Some(options) => Kind::ManyOf {
                        options: options?,
                        min: count("minItems"),
                        max: count("maxItems"),
                    },
                    None => {
                        return Err(format!(
                            "the form's field `{}` is a list without options, which toolhost \
                             cannot show",
                            printable(name, SHOWN_TEXT)
                        ));
                    }
                }
            }
            other => {
                return Err(format!(
                    "the form's field `{}` is of type {}, which toolhost cannot show",
                    printable(name, SHOWN_TEXT),
                    other.map_or_else(|| "(none)".to_owned(), |t| printable(t, SHOWN_TEXT))
                ));
            }
        };
        Ok(Self {
            name: name.to_owned(),
            title: text("title"),
            description: text("description"),
            required,
            default: p.get("default").cloned(),
            kind,
        })
    }

    /// The line asking for this field: its title, description, what it
    /// takes, its options and default.
    fn prompt(&self) -> String {
        let mut p = format!(
            "  {}",
            printable(self.title.as_deref().unwrap_or(&self.name), SHOWN_TEXT)
        );
        if let Some(d) = &self.description {
            p.push_str(&format!(" - {}", printable(d, SHOWN_TEXT)));
        }
        let what = match &self.kind {
            Kind::Text { format, .. } => match format {
                Some(f) => format!("text, {}", printable(f, SHOWN_TEXT)),
                None => "text".to_owned(),
            },
            Kind::Number { integer: true, .. } => "a whole number".to_owned(),
            Kind::Number { .. } => "a number".to_owned(),
            Kind::YesNo => "y/n".to_owned(),
            Kind::OneOf(_) => "one of".to_owned(),
            Kind::ManyOf { .. } => "any of, separated by commas".to_owned(),
        };
        p.push_str(&format!(" ({what}"));
        if self.required {
            p.push_str(", required");
        }
        p.push(')');
        if let Kind::OneOf(options) | Kind::ManyOf { options, .. } = &self.kind {
            for (i, (value, title)) in options.iter().enumerate() {
                p.push_str(&format!(
                    "\n    {}) {}",
                    i + 1,
                    printable(value, SHOWN_TEXT)
                ));
                if let Some(t) = title {
                    p.push_str(&format!(" - {}", printable(t, SHOWN_TEXT)));
                }
            }
            p.push_str("\n ");
        }
        if let Some(default) = &self.default {
            let shown = match default {
                Value::String(s) => s.clone(),
                Value::Bool(true) => "y".into(),
                Value::Bool(false) => "n".into(),
                other => other.to_string(),
            };
            p.push_str(&format!(" [{}]", printable(&shown, SHOWN_TEXT)));
        }
        p.push_str(" > ");
        p
    }

    /// The value `line` gives this field: `None` for an optional field
    /// left empty, or why the line does not fit.
    fn read(&self, line: &str) -> Result<Option<Value>, String> {
        let line = line.trim();
        if line.is_empty() {
            return match (&self.default, self.required) {
                (Some(default), _) => Ok(Some(default.clone())),
                (None, true) => Err("This field is required.".into()),
                (None, false) => Ok(None),
            };
        }
        match &self.kind {
            Kind::Text { min, max, .. } => {
                let n = line.chars().count() as u64;
                if min.is_some_and(|m| n < m) {
                    return Err(format!("At least {} characters.", min.unwrap_or(0)));
                }
                if max.is_some_and(|m| n > m) {
                    return Err(format!("At most {} characters.", max.unwrap_or(0)));
                }
                Ok(Some(Value::String(line.to_owned())))
            }
            Kind::Number { integer, min, max } => {
                let value = if *integer {
                    line.parse::<i64>()
                        .map(Value::from)
                        .map_err(|_| "A whole number, e.g. 42.".to_owned())?
                } else {
                    line.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .map(Value::from)
                        .ok_or_else(|| "A number, e.g. 4.2.".to_owned())?
                };
                let v = value.as_f64().unwrap_or(0.0);
                if min.is_some_and(|m| v < m) {
                    return Err(format!("At least {}.", min.unwrap_or(0.0)));
                }
                if max.is_some_and(|m| v > m) {
                    return Err(format!("At most {}.", max.unwrap_or(0.0)));
                }
                Ok(Some(value))
            }
            Kind::YesNo => match line.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Ok(Some(Value::Bool(true))),
                "n" | "no" | "false" => Ok(Some(Value::Bool(false))),
                _ => Err("Type y or n.".into()),
            },
            Kind::OneOf(options) => pick(options, line).map(|v| Some(Value::String(v))),
            Kind::ManyOf { options, min, max } => {
                let picked = line
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| pick(options, s))
                    .collect::<Result<Vec<String>, String>>()?;
                let n = picked.len() as u64;
                if min.is_some_and(|m| n < m) {
                    return Err(format!("Choose at least {}.", min.unwrap_or(0)));
                }
                if max.is_some_and(|m| n > m) {
                    return Err(format!("Choose at most {}.", max.unwrap_or(0)));
                }
                Ok(Some(Value::Array(
                    picked.into_iter().map(Value::String).collect(),
                )))
            }
        }
    }
}

/// The option `answer` names, by its number or its value.
fn pick(options: &[(String, Option<String>)], answer: &str) -> Result<String, String> {
    if let Ok(n) = answer.parse::<usize>()
        && let Some((value, _)) = n.checked_sub(1).and_then(|i| options.get(i))
    {
        return Ok(value.clone());
    }
    options
        .iter()
        .find(|(value, _)| value == answer)
        .map(|(value, _)| value.clone())
        .ok_or_else(|| format!("Choose by number, 1 to {}.", options.len()))
}

/// The options of a choice, if `p` is one: `enum` (with the legacy
/// `enumNames` as titles), or `oneOf`/`anyOf` of `const` with `title`.
fn options(p: &Value) -> Option<Result<Options, String>> {
    let listed: Options = if let Some(values) = p.get("enum").and_then(Value::as_array) {
        let names = p.get("enumNames").and_then(Value::as_array);
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let title = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                (scalar_text(v), title)
            })
            .collect()
    } else if let Some(choices) = p
        .get("oneOf")
        .or_else(|| p.get("anyOf"))
        .and_then(Value::as_array)
    {
        choices
            .iter()
            .map(|c| {
                let title = c.get("title").and_then(Value::as_str).map(str::to_owned);
                (scalar_text(c.get("const").unwrap_or(&Value::Null)), title)
            })
            .collect()
    } else {
        return None;
    };
    if listed.is_empty() {
        return Some(Err("the form offers a choice without options".into()));
    }
    if listed.len() > MAX_OPTIONS {
        return Some(Err(format!(
            "the form offers a choice of {} options; toolhost shows at most {MAX_OPTIONS}",
            listed.len()
        )));
    }
    Some(Ok(listed))
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `text`, cut to `max` characters, with every control character (and
/// every character that reorders text, such as a right-to-left override)
/// shown escaped.
fn printable(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push_str(&format!("… ({} characters in all)", text.chars().count()));
            break;
        }
        let reorders = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c.is_control() || reorders {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Answers from a script, recording every prompt.
    struct Script {
        answers: std::collections::VecDeque<&'static str>,
        shown: String,
    }

    #[async_trait]
    impl Lines for Script {
        async fn ask(&mut self, prompt: &str) -> io::Result<String> {
            self.shown.push_str(prompt);
            self.answers
                .pop_front()
                .map(str::to_owned)
                .ok_or_else(|| io::ErrorKind::UnexpectedEof.into())
        }
    }

    async fn run(
        schema: Value,
        answers: &[&'static str],
    ) -> (io::Result<ElicitationAnswer>, String) {
        let request = ElicitationRequest::new("MCP server `docs`", "Fill this in", schema.clone());
        let form = Form::parse(&schema).unwrap();
        let mut script = Script {
            answers: answers.iter().copied().collect(),
            shown: String::new(),
        };
        let answer = put(&mut script, &request, &form).await;
        (answer, script.shown)
    }

    /// The form the MCP conformance suite asks with defaults (SEP-1034).
    fn defaults_form() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
            },
        })
    }

    #[tokio::test]
    async fn n7_enter_takes_each_fields_default() {
        let (answer, shown) = run(defaults_form(), &["a", "", "", "", "", ""]).await;
        assert_eq!(
            answer.unwrap(),
            ElicitationAnswer::Accept(json!({
                "name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true
            }))
        );
        assert!(
            shown.contains("MCP server `docs` asks: Fill this in"),
            "{shown}"
        );
        assert!(shown.contains("  name (text) [John Doe] > "), "{shown}");
        assert!(shown.contains("  age (a whole number) [30] > "), "{shown}");
        assert!(shown.contains("    2) inactive"), "{shown}");
        assert!(shown.contains("  verified (y/n) [y] > "), "{shown}");
    }

    #[tokio::test]
    async fn n7_answers_are_read_until_they_fit_the_field() {
        let schema = json!({
            "type": "object",
            "properties": {
                "age": {"type": "integer", "title": "Age", "minimum": 0},
                "ok": {"type": "boolean"},
                "pick": {"type": "string", "oneOf": [
                    {"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}
                ]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}},
                "note": {"type": "string", "maxLength": 3},
            },
            "required": ["age", "ok"],
        });
        let (answer, shown) = run(
            schema,
            // The fields come in the order of their names.
            &[
                "maybe", "a", "", "old", "-1", "41", "", "sure", "n", "7", "2", "x, 3",
            ],
        )
        .await;
        assert_eq!(
            answer.unwrap(),
            ElicitationAnswer::Accept(json!({
                "age": 41, "ok": false, "pick": "v2", "tags": ["x", "z"]
            }))
        );
        for said in [
            "Type a, d or c.",
            "This field is required.",
            "A whole number, e.g. 42.",
            "At least 0.",
            "Type y or n.",
            "Choose by number, 1 to 2.",
            "  Age (a whole number, required) > ",
            "    1) v1 - First",
        ] {
            assert!(shown.contains(said), "{said}: {shown}");
        }
    }

    #[tokio::test]
    async fn n7_decline_and_cancel_are_the_persons() {
        let (answer, _) = run(defaults_form(), &["d"]).await;
        assert_eq!(answer.unwrap(), ElicitationAnswer::Decline);
        let (answer, _) = run(defaults_form(), &["cancel"]).await;
        assert_eq!(answer.unwrap(), ElicitationAnswer::Cancel);
        // A terminal that closes mid-form answers nothing.
        let (answer, _) = run(defaults_form(), &["a", ""]).await;
        assert_eq!(answer.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    #[tokio::test]
    async fn n7_a_servers_text_cannot_drive_the_terminal() {
        let schema = json!({
            "type": "object",
            "properties": {"f\u{1b}[2J": {"type": "string", "title": "t\u{7}\u{202e}x", "enum": ["\u{1b}]0;pwned\u{7}"]}},
        });
        let request = ElicitationRequest::new(
            "MCP server `docs`",
            format!("hi\u{1b}[1A\rAllow the call? [y/N] {}", "long".repeat(5000)),
            schema.clone(),
        );
        let form = Form::parse(&schema).unwrap();
        let mut script = Script {
            answers: ["c"].into_iter().collect(),
            shown: String::new(),
        };
        put(&mut script, &request, &form).await.unwrap();
        let mut field_prompt = form.fields[0].prompt();
        field_prompt.push_str(&script.shown);
        for shown in [&script.shown, &field_prompt] {
            assert!(
                !shown.chars().any(|c| c.is_control() && c != '\n'),
                "{shown:?}"
            );
            assert!(!shown.contains('\u{202e}'), "{shown:?}");
        }
        assert!(
            script.shown.contains("\\u{1b}[1A\\u{d}"),
            "{}",
            script.shown
        );
        assert!(
            script.shown.contains("(20000 characters in all)")
                || script.shown.contains("characters in all")
        );
    }

    #[test]
    fn n7_a_form_toolhost_cannot_show_is_refused_saying_why() {
        for (schema, why) in [
            (
                json!({"properties": {"o": {"type": "object"}}}),
                "of type object",
            ),
            (
                json!({"properties": {"l": {"type": "array"}}}),
                "a list without options",
            ),
            (
                json!({"properties": {"e": {"type": "string", "enum": []}}}),
                "without options",
            ),
            (json!({"properties": 3}), "not an object"),
        ] {
            let err = Form::parse(&schema).unwrap_err();
            assert!(err.contains(why), "{schema}: {err}");
        }
        let many: Map<String, Value> = (0..100)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        let err = Form::parse(&json!({"properties": many})).unwrap_err();
        assert!(err.contains("at most 64"), "{err}");
    }
}

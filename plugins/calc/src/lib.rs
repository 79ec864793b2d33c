//! A calculator plugin: pure computation, no capabilities needed.

use toolhost_sdk::prelude::*;

/// Arguments of `calc`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CalcArgs {
    /// An arithmetic expression: numbers, + - * / ^, parentheses.
    expression: String,
}

/// Arguments of `stats`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StatsArgs {
    /// The numbers to summarise (at least one).
    numbers: Vec<f64>,
}

fn calc(args: CalcArgs, _call: &CallInfo) -> Result<Output, ToolError> {
    let value = Parser::new(&args.expression)
        .parse()
        .map_err(|e| ToolError::invalid("/expression", e))?;
    Ok(Output::text(format_number(value)))
}

fn stats(args: StatsArgs, _call: &CallInfo) -> Result<Output, ToolError> {
    let mut n = args.numbers;
    if n.is_empty() {
        return Err(ToolError::invalid("/numbers", "give at least one number"));
    }
    n.sort_by(f64::total_cmp);
    let count = n.len() as f64;
    let mean = n.iter().sum::<f64>() / count;
    let median = if n.len() % 2 == 1 {
        n[n.len() / 2]
    } else {
        (n[n.len() / 2 - 1] + n[n.len() / 2]) / 2.0
    };
    let var = n.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / count;
    let summary = format!(
        "count {}, mean {}, median {}, min {}, max {}, stddev {}",
        n.len(),
        format_number(mean),
        format_number(median),
        format_number(n[0]),
        format_number(n[n.len() - 1]),
        format_number(var.sqrt())
    );
    Ok(Output::dual(
        format!(
            "mean {}, median {}",
            format_number(mean),
            format_number(median)
        ),
        summary,
    ))
}

fn format_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{}", (x * 1e10).round() / 1e10)
    }
}

/// Recursive descent over: expr = term (('+'|'-') term)*; term = power
/// (('*'|'/') power)*; power = unary ('^' power)?; unary = '-' unary | atom;
/// atom = number | '(' expr ')'.
struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        Self {
            src: src.as_bytes(),
            pos: 0,
        }
    }

    fn parse(mut self) -> Result<f64, String> {
        let v = self.expr(0)?;
        self.skip_ws();
        if self.pos < self.src.len() {
            return Err(format!(
                "unexpected `{}` at offset {}",
                self.src[self.pos] as char, self.pos
            ));
        }
        if !v.is_finite() {
            return Err("the result is not a finite number".into());
        }
        Ok(v)
    }

    fn skip_ws(&mut self) {
        while self.pos < self.src.len() && self.src[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.src.get(self.pos).copied()
    }

    fn expr(&mut self, depth: u32) -> Result<f64, String> {
        if depth > 64 {
            return Err("the expression nests too deeply".into());
        }
        let mut v = self.term(depth)?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let r = self.term(depth)?;
            v = if op == b'+' { v + r } else { v - r };
        }
        Ok(v)
    }

    fn term(&mut self, depth: u32) -> Result<f64, String> {
        let mut v = self.power(depth)?;
        while let Some(op @ (b'*' | b'/')) = self.peek() {
            self.pos += 1;
            let r = self.power(depth)?;
            if op == b'/' && r == 0.0 {
                return Err("division by zero".into());
            }
            v = if op == b'*' { v * r } else { v / r };
        }
        Ok(v)
    }

    fn power(&mut self, depth: u32) -> Result<f64, String> {
        let base = self.unary(depth)?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            let exp = self.power(depth + 1)?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }

    fn unary(&mut self, depth: u32) -> Result<f64, String> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
            return Ok(-self.unary(depth + 1)?);
        }
        self.atom(depth)
    }

    fn atom(&mut self, depth: u32) -> Result<f64, String> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                let v = self.expr(depth + 1)?;
                if self.peek() != Some(b')') {
                    return Err(format!("expected `)` at offset {}", self.pos));
                }
                self.pos += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let start = self.pos;
                while self.pos < self.src.len()
                    && (self.src[self.pos].is_ascii_digit() || self.src[self.pos] == b'.')
                {
                    self.pos += 1;
                }
                let text = std::str::from_utf8(&self.src[start..self.pos]).expect("ASCII");
                text.parse()
                    .map_err(|_| format!("`{text}` is not a number"))
            }
            Some(c) => Err(format!("unexpected `{}` at offset {}", c as char, self.pos)),
            None => Err("the expression ends too early".into()),
        }
    }
}

fn register(tools: &mut Tools) {
    tools
        .add(
            "calc",
            "Evaluates an arithmetic expression (+ - * / ^ and parentheses)",
            calc,
        )
        .safe()
        .idempotent()
        .read_only()
        .open_world(false);
    tools
        .add(
            "stats",
            "Summarises a list of numbers: mean, median, min, max, standard deviation",
            stats,
        )
        .safe()
        .idempotent()
        .read_only()
        .open_world(false);
}

toolhost_sdk::tool_plugin!(register);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_with_precedence() {
        assert_eq!(Parser::new("1 + 2 * 3").parse(), Ok(7.0));
        assert_eq!(Parser::new("(1 + 2) * 3").parse(), Ok(9.0));
        assert_eq!(Parser::new("2 ^ 3 ^ 2").parse(), Ok(512.0));
        assert_eq!(Parser::new("-2 ^ 2").parse(), Ok(4.0));
        assert!(Parser::new("1 / 0").parse().is_err());
        assert!(Parser::new("1 +").parse().is_err());
        assert!(Parser::new("2 x").parse().is_err());
    }
}

//! `json.dumps(json.loads(text), ensure_ascii=False)` as Python writes it:
//! the serialization MaskBench uses for its instances (`", "` and `": "`
//! separators, non-ASCII as is, integers exact, floats in `repr` form, a
//! duplicate key keeps its first position and its last value).

/// A parsed JSON value, numbers kept as text.
enum Value {
    Null,
    Bool(bool),
    Int(String),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    Dict(Vec<(String, Value)>),
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

type Res<T> = Result<T, String>;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.pos < self.s.len() && matches!(self.s[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
    }

    fn err<T>(&self, what: &str) -> Res<T> {
        Err(format!("{what} at byte {}", self.pos))
    }

    fn value(&mut self, depth: usize) -> Res<Value> {
        if depth > 10_000 {
            return self.err("nesting too deep");
        }
        self.ws();
        match self.s.get(self.pos) {
            Some(b'{') => {
                self.pos += 1;
                let mut items: Vec<(String, Value)> = Vec::new();
                self.ws();
                if self.s.get(self.pos) == Some(&b'}') {
                    self.pos += 1;
                    return Ok(Value::Dict(items));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.ws();
                    if self.s.get(self.pos) != Some(&b':') {
                        return self.err("expected ':'");
                    }
                    self.pos += 1;
                    let v = self.value(depth + 1)?;
                    match items.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = v,
                        None => items.push((k, v)),
                    }
                    self.ws();
                    match self.s.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(Value::Dict(items));
                        }
                        _ => return self.err("expected ',' or '}'"),
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.pos) == Some(&b']') {
                    self.pos += 1;
                    return Ok(Value::List(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.s.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Value::List(items));
                        }
                        _ => return self.err("expected ',' or ']'"),
                    }
                }
            }
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b't') if self.s[self.pos..].starts_with(b"true") => {
                self.pos += 4;
                Ok(Value::Bool(true))
            }
            Some(b'f') if self.s[self.pos..].starts_with(b"false") => {
                self.pos += 5;
                Ok(Value::Bool(false))
            }
            Some(b'n') if self.s[self.pos..].starts_with(b"null") => {
                self.pos += 4;
                Ok(Value::Null)
            }
            Some(b'-' | b'0'..=b'9') => {
                let start = self.pos;
                while self.pos < self.s.len()
                    && matches!(
                        self.s[self.pos],
                        b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                    )
                {
                    self.pos += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap();
                if text.contains(['.', 'e', 'E']) {
                    text.parse::<f64>()
                        .map(Value::Float)
                        .map_err(|e| format!("bad number {text}: {e}"))
                } else {
                    let (neg, digits) = match text.strip_prefix('-') {
                        Some(d) => (true, d),
                        None => (false, text),
                    };
                    let digits = digits.trim_start_matches('0');
                    Ok(Value::Int(if digits.is_empty() {
                        "0".to_string()
                    } else if neg {
                        format!("-{digits}")
                    } else {
                        digits.to_string()
                    }))
                }
            }
            _ => self.err("expected a value"),
        }
    }

    fn string(&mut self) -> Res<String> {
        if self.s.get(self.pos) != Some(&b'"') {
            return self.err("expected a string");
        }
        self.pos += 1;
        let mut out: Vec<u16> = Vec::new();
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.pos) else {
                return self.err("unterminated string");
            };
            self.pos += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = *self.s.get(self.pos).ok_or("bad escape")?;
                    self.pos += 1;
                    let unit: u16 = match e {
                        b'"' => 0x22,
                        b'\\' => 0x5c,
                        b'/' => 0x2f,
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => 10,
                        b'r' => 13,
                        b't' => 9,
                        b'u' => {
                            let h = self
                                .s
                                .get(self.pos..self.pos + 4)
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u16::from_str_radix(h, 16).ok())
                                .ok_or("bad \\u escape")?;
                            self.pos += 4;
                            h
                        }
                        _ => return self.err("bad escape"),
                    };
                    flush(&mut bytes, &mut out);
                    out.push(unit);
                }
                _ => bytes.push(c),
            }
        }
        flush(&mut bytes, &mut out);
        // Lone surrogates become U+FFFD (Python would keep them; they
        // cannot be written as UTF-8 anyway).
        Ok(String::from_utf16_lossy(&out))
    }
}

fn flush(bytes: &mut Vec<u8>, out: &mut Vec<u16>) {
    if !bytes.is_empty() {
        out.extend(String::from_utf8_lossy(bytes).encode_utf16());
        bytes.clear();
    }
}

/// A string as Python's `json.dumps(ensure_ascii=False)` writes it (the
/// same text as the library's canonical JSON of a string).
fn write_str(s: &str, out: &mut String) {
    out.push_str(&cgram::json_schema::strings::canonical_json(s));
}

/// Python's `repr(float)`: shortest round-trip digits, scientific notation
/// below 1e-4 and from 1e16 on.
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let sci = format!("{x:e}");
    let (mant, exp) = sci.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.push_str(&"0".repeat(int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.push_str(&"0".repeat((-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.abs()));
    }
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(s) => out.push_str(s),
        Value::Float(f) => out.push_str(&py_float(*f)),
        Value::Str(s) => write_str(s, out),
        Value::List(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(x, out);
            }
            out.push(']');
        }
        Value::Dict(items) => {
            out.push('{');
            for (i, (k, x)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(k, out);
                out.push_str(": ");
                write(x, out);
            }
            out.push('}');
        }
    }
}

/// `json.dumps(json.loads(text), ensure_ascii=False)`.
pub fn dumps(text: &str) -> Result<String, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.pos != p.s.len() {
        return p.err("trailing characters");
    }
    let mut out = String::new();
    write(&v, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python() {
        assert_eq!(
            dumps(r#"{"a":1,"b":[1.5,1e-5,1e16,100.0,-0,"x\u00e9\n"],"a":2}"#).unwrap(),
            "{\"a\": 2, \"b\": [1.5, 1e-05, 1e+16, 100.0, 0, \"xé\\n\"]}"
        );
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(123456789012345680.0), "1.2345678901234568e+17");
        assert_eq!(py_float(1.0e15), "1000000000000000.0");
    }
}
